// Daemon-wide counters, written by the progress engine, read by the admin service (and so by
// ohioctl and the metrics file). Monotonic from the daemon's start.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "common/status.h"
#include "daemon/ops/latency_histogram.h"
#include "shm/handed_back.h"

namespace ohio {

// What an error published to a group's ranks was about: the fixed label set of the error
// counters, so that a kind that never happened still reads 0.
enum class ErrorKind { kSizeMismatch, kTimeout, kGroupFailed, kRefused, kOther };
constexpr size_t kErrorKinds = 5;

inline ErrorKind KindOf(Code code) {
  switch (code) {
    case Code::kSizeMismatch: return ErrorKind::kSizeMismatch;
    case Code::kTimeout: return ErrorKind::kTimeout;
    case Code::kGroupFailed: return ErrorKind::kGroupFailed;
    case Code::kRefused: return ErrorKind::kRefused;
    default: return ErrorKind::kOther;
  }
}

inline const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kSizeMismatch: return "size_mismatch";
    case ErrorKind::kTimeout: return "timeout";
    case ErrorKind::kGroupFailed: return "group_failed";
    case ErrorKind::kRefused: return "refused";
    case ErrorKind::kOther: return "other";
  }
  return "other";
}

struct DaemonCounters {
  std::atomic<uint64_t> collectives_served{0};  // calls completed without error
  std::atomic<uint64_t> collectives_failed{0};  // calls that returned an error to their ranks
  std::atomic<uint64_t> rounds{0};              // staging rounds completed
  std::atomic<uint64_t> bytes_local{0};         // bytes exchanged between ranks of the same node
  // Payload: the ranks' data, without eager headers or a failed alltoallv's count tables.
  std::atomic<uint64_t> bytes_sent{0};          // payload of puts to other nodes that left
  std::atomic<uint64_t> bytes_received{0};      // payload of other nodes' puts that landed here
  std::atomic<uint64_t> groups_failed{0};
  // The progress engine's sleeps, and the ones something woke (a doorbell, a transport, a
  // command) before its timer: how often the engine was put on a call's path.
  std::atomic<uint64_t> engine_sleeps{0};
  std::atomic<uint64_t> engine_wakeups{0};
  // Times the daemon's signal to a group found ranks asleep and woke them.
  std::atomic<uint64_t> ranks_woken{0};
  // The most puts one group had in flight at once (what direct's window bounds).
  std::atomic<uint64_t> puts_in_flight_peak{0};
  // Errors published to groups (a round's error, or the error that closed a group), by kind:
  // one per group and event, not per rank.
  std::array<std::atomic<uint64_t>, kErrorKinds> errors{};
  LatencyHistograms latency;
  // Calls of served MPI functions that the ranks handed to the MPI library, by function and
  // reason (shm/handed_back.h): one per call of a group, counted on each of its nodes.
  std::array<std::array<std::atomic<uint64_t>, kHandBackReasons>, kHandedBackFunctions> handed_back{};

  void CountError(Code code) { errors[static_cast<size_t>(KindOf(code))].fetch_add(1, std::memory_order_relaxed); }
};

}  // namespace ohio
