// The binary layout of a group's shared segment: header (daemon-written control block),
// one cache-line slot per local rank (rank-written), then the SSB and the SRB. The segment is
// a sealed memfd mapped by the daemon and by every local rank of the group, so everything in
// it is either written once before it is handed out or an address-free lock-free atomic.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ohio {

constexpr uint32_t kSegmentMagic = 0x4f48494f;  // "OHIO"
constexpr uint32_t kSegmentVersion = 1;
constexpr size_t kCacheLine = 64;
constexpr size_t kPage = 4096;
constexpr size_t kErrorMessageBytes = 512;

static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words must be plain atomics");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "slots must be plain atomics");

enum class GroupState : uint32_t {
  kOpen = 0,
  kFailed = 1,  // permanently: a rank died or left mid-way; every later call gets the error
};

// Rounds are numbered from 1 and are compared for equality only, so wrapping after 2^32
// rounds is harmless. A call of R rounds (see staging.h) uses R consecutive round numbers.
struct alignas(kCacheLine) SegmentHeader {
  // Written by the daemon before the segment is handed out; read-only afterwards.
  uint32_t magic;
  uint32_t version;
  uint64_t segment_bytes;
  uint32_t group_size;
  uint32_t local_ranks;
  uint64_t slots_offset;
  uint64_t ssb_offset;
  uint64_t ssb_bytes;
  uint64_t srb_offset;
  uint64_t srb_bytes;
  uint32_t timeout_ms;
  uint32_t algorithm;  // ohio::Algorithm
  // The buffer sizes every node of the group plans with (the smallest over its nodes): set
  // by the daemon before it publishes ready_round = 1.
  uint64_t plan_ssb_bytes;
  uint64_t plan_srb_bytes;

  // Daemon -> ranks. Ranks sleep on event_count, which the daemon bumps after every change
  // below, so a rank that read it before checking a condition never misses a wake-up.
  alignas(kCacheLine) std::atomic<uint32_t> event_count;
  std::atomic<uint32_t> ready_round;     // the SSB may be filled for this round
  std::atomic<uint32_t> released_round;  // this round may be copied out (or has failed)
  std::atomic<uint32_t> failed_round;    // == released_round: that round failed, see round_error
  std::atomic<uint32_t> round_error_code;  // ohio::Code
  std::atomic<uint32_t> state;             // GroupState
  std::atomic<uint32_t> group_error_code;  // ohio::Code, once state is kFailed
  // Deliveries of released_round (exchange_plan.h) that have landed in the SRB, in order.
  std::atomic<uint32_t> delivered;
  char round_error[kErrorMessageBytes];
  char group_error[kErrorMessageBytes];

  // Ranks -> daemon: set while the progress engine sleeps; a rank that finds it set after
  // publishing writes the group's doorbell eventfd.
  alignas(kCacheLine) std::atomic<uint32_t> daemon_sleeping;
};

// bytes_per_rank of a rank that opts out of a call (ohio_alltoall_skip): the round then fails
// with Code::kSkipped on every rank of every node, so that all of them can fall back together.
constexpr uint64_t kSkipBytes = ~uint64_t{0};

struct alignas(kCacheLine) RankSlot {
  std::atomic<uint32_t> arrived_round;    // copy-in of this round is complete
  std::atomic<uint32_t> done_round;       // copy-out of this round is complete
  std::atomic<uint64_t> bytes_per_rank;   // M of the call `arrived_round` belongs to
  std::atomic<uint32_t> round_in_call;    // which of the call's rounds `arrived_round` is
  std::atomic<uint32_t> rounds_in_call;   // how many rounds the call has
  std::atomic<uint32_t> consumed;         // deliveries of arrived_round copied out so far
};

struct SegmentLayout {
  uint64_t slots_offset = 0;
  uint64_t ssb_offset = 0;
  uint64_t ssb_bytes = 0;
  uint64_t srb_offset = 0;
  uint64_t srb_bytes = 0;
  uint64_t segment_bytes = 0;
};

// SSB and SRB start on page boundaries so that they can be registered with an HCA on their own.
constexpr uint64_t RoundUp(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

inline SegmentLayout ComputeSegmentLayout(uint32_t local_ranks, uint64_t ssb_bytes, uint64_t srb_bytes) {
  SegmentLayout l;
  l.slots_offset = RoundUp(sizeof(SegmentHeader), kCacheLine);
  l.ssb_offset = RoundUp(l.slots_offset + uint64_t{local_ranks} * sizeof(RankSlot), kPage);
  l.ssb_bytes = ssb_bytes;
  l.srb_offset = RoundUp(l.ssb_offset + ssb_bytes, kPage);
  l.srb_bytes = srb_bytes;
  l.segment_bytes = RoundUp(l.srb_offset + srb_bytes, kPage);
  return l;
}

}  // namespace ohio
