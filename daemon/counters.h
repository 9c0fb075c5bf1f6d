// Daemon-wide counters, written by the progress engine, read by the admin service.
#pragma once

#include <atomic>
#include <cstdint>

namespace ohio {

struct DaemonCounters {
  std::atomic<uint64_t> collectives_served{0};  // calls completed without error
  std::atomic<uint64_t> collectives_failed{0};  // calls that returned an error to their ranks
  std::atomic<uint64_t> rounds{0};              // staging rounds completed
  std::atomic<uint64_t> bytes_local{0};         // bytes exchanged between ranks of the same node
  std::atomic<uint64_t> groups_failed{0};
};

}  // namespace ohio
