// Waiting for another process to change something in a group's segment, and telling waiters
// that something changed, without a system call on either side when nobody sleeps.
//
// A waiter spins briefly (yielding between bursts, so that a rank sharing its core with the
// one it waits for hands the core over), then counts itself in the header's `sleepers`,
// re-checks, and sleeps on the futex of `event_count`. A changer publishes its change, bumps
// `event_count`, and makes the FUTEX_WAKE call only when `sleepers` is non-zero. Both sides
// order these with sequentially consistent operations, so either the waiter sees the change
// before sleeping or the changer sees the sleeper and wakes it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "common/cpu_relax.h"
#include "shm/segment_layout.h"

namespace ohio {

// After publishing a change: bumps the event word and wakes sleepers, if any. True if a wake
// system call was made.
bool SignalChange(SegmentHeader* header);

enum class WaitOutcome { kReady, kStopped, kTimedOut };

struct WaitPolicy {
  std::chrono::microseconds spin{20};       // before the first sleep
  // More runnable ranks than cores: the one waited for is likely not running, so the core is
  // handed over after a few checks instead of a long burst, which brought small calls down to
  // Open MPI's time (docs/investigations/fast-path.md has the figures).
  bool oversubscribed = false;
  std::chrono::milliseconds slice{100};     // sleeps are cut into slices to check `stop`
  std::chrono::steady_clock::time_point deadline;
};

// Waits until ready() (kReady), stop() (kStopped; cheap, checked between spins and before
// every sleep), after_sleep() (kStopped; may cost a system call, checked after every sleep)
// or the deadline (kTimedOut). ready() is checked first every time, and again once stop() or
// after_sleep() holds: a condition that came true just before the stop is reported ready, not
// stopped (the other ranks of a group finish its last call, leave, and the group closes while
// this rank is between its two checks).
template <typename Ready, typename Stop, typename AfterSleep>
WaitOutcome WaitForChange(SegmentHeader* header, const WaitPolicy& policy, Ready ready, Stop stop,
                          AfterSleep after_sleep);

namespace segment_change_internal {
void Sleep(SegmentHeader* header, uint32_t seen, std::chrono::nanoseconds timeout);
void Yield();
}  // namespace segment_change_internal

template <typename Ready, typename Stop, typename AfterSleep>
WaitOutcome WaitForChange(SegmentHeader* header, const WaitPolicy& policy, Ready ready, Stop stop,
                          AfterSleep after_sleep) {
  using Clock = std::chrono::steady_clock;
  if (ready()) return WaitOutcome::kReady;
  const auto start = Clock::now();
  const int checks_per_yield = policy.oversubscribed ? 8 : 64;
  while (Clock::now() - start < policy.spin) {
    for (int i = 0; i < checks_per_yield; ++i) {
      if (ready()) return WaitOutcome::kReady;
      CpuRelax();
    }
    if (stop()) return ready() ? WaitOutcome::kReady : WaitOutcome::kStopped;
    segment_change_internal::Yield();
  }
  for (;;) {
    const uint32_t seen = header->event_count.load(std::memory_order_seq_cst);
    if (ready()) return WaitOutcome::kReady;
    if (stop()) return ready() ? WaitOutcome::kReady : WaitOutcome::kStopped;
    const auto now = Clock::now();
    if (now >= policy.deadline) return WaitOutcome::kTimedOut;
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(policy.deadline - now);
    segment_change_internal::Sleep(header, seen, left < policy.slice ? left : std::chrono::nanoseconds(policy.slice));
    if (!ready() && after_sleep()) return ready() ? WaitOutcome::kReady : WaitOutcome::kStopped;
  }
}

}  // namespace ohio
