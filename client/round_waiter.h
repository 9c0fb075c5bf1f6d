// How a rank waits for anything in its group's segment (other ranks' arrivals, the daemon's
// deliveries): spin, then sleep on the event word (shm/event_word.h), giving up when the group
// fails, when the daemon's connection closes, or past the deadline, each with its own error.
#pragma once

#include <algorithm>
#include <chrono>
#include <string>

#include "common/status.h"
#include "shm/event_word.h"
#include "shm/segment_layout.h"

namespace ohio {

class RoundWaiter {
 public:
  RoundWaiter() = default;
  // `control_fd` is the rank's connection to ohiod; `patience` bounds every single wait.
  // `oversubscribed`: more ranks of the group on this node than cores this process may run on.
  // A wait spins at least `min_spin` (0: never spins) and at most `max_spin` before it sleeps:
  // within that range, twice the rank's typical call time (NoteCall). A wait inside a call
  // seldom lasts longer than a call, and a sleep costs the sleeper a wake-up delay and its
  // waker a system call, which for calls of 20 us to 1 ms was most of what made them slower
  // than Open MPI's (docs/PERFORMANCE.md, "Fast path, second pass").
  RoundWaiter(SegmentHeader* header, int control_fd, std::chrono::microseconds min_spin,
              std::chrono::microseconds max_spin, std::chrono::milliseconds patience, bool oversubscribed)
      : header_(header),
        control_fd_(control_fd),
        min_spin_(min_spin),
        max_spin_(std::max(min_spin, max_spin)),
        patience_(patience),
        oversubscribed_(oversubscribed) {}

  // A call of this group took `took` on this rank: the typical call time follows it.
  void NoteCall(std::chrono::nanoseconds took) { typical_call_ns_ += (took.count() - typical_call_ns_) / 8; }
  // How long the next wait spins before it sleeps.
  std::chrono::microseconds Spin() const {
    if (min_spin_.count() == 0) return min_spin_;
    const auto twice_typical = std::chrono::microseconds(typical_call_ns_ / 500);
    return std::clamp(twice_typical, min_spin_, max_spin_);
  }

  // Ok once ready() holds; else the group's error, kDaemonLost or kTimeout ("<who> did not
  // <what> within N ms").
  template <typename Ready>
  Status Wait(Ready ready, const char* who, const char* what) const;

  // Whether ready() holds within `most` (spinning, then sleeping on the event word). False as
  // soon as the group fails or the daemon is gone: the caller asks the group which.
  template <typename Ready>
  bool WaitBriefly(Ready ready, std::chrono::microseconds most) const;

  bool GroupFailed() const {
    return header_->state.load(std::memory_order_acquire) != static_cast<uint32_t>(GroupState::kOpen);
  }
  Status GroupError() const;
  bool DaemonGone() const;
  // The daemon looked in on the group (a group on one node) within the last few watch ticks:
  // it was alive then, no system call needed to tell.
  bool DaemonSeenLately() const {
    const uint64_t seen = header_->daemon_seen_ns.load(std::memory_order_relaxed);
    return seen != 0 && MonotonicNs() - seen < kDaemonSeenLatelyNs;
  }
  static constexpr uint64_t kDaemonSeenLatelyNs = 300'000'000;  // three watch ticks
  // More of the node's processes (its ranks and ohiod) than its CPUs.
  bool oversubscribed() const { return oversubscribed_; }

 private:
  Status Outcome(WaitOutcome outcome, const char* who, const char* what) const;

  SegmentHeader* header_ = nullptr;
  int control_fd_ = -1;
  std::chrono::microseconds min_spin_{20};
  std::chrono::microseconds max_spin_{1000};
  int64_t typical_call_ns_ = 0;  // a moving average over the last 8 or so calls
  std::chrono::milliseconds patience_{0};
  bool oversubscribed_ = false;
};

template <typename Ready>
Status RoundWaiter::Wait(Ready ready, const char* who, const char* what) const {
  WaitPolicy policy;
  policy.spin = Spin();
  policy.oversubscribed = oversubscribed_;
  policy.deadline = std::chrono::steady_clock::now() + patience_;
  const WaitOutcome outcome = WaitForChange(
      header_, policy, ready, [this] { return GroupFailed(); }, [this] { return DaemonGone(); });
  return outcome == WaitOutcome::kReady ? Status::Ok() : Outcome(outcome, who, what);
}

template <typename Ready>
bool RoundWaiter::WaitBriefly(Ready ready, std::chrono::microseconds most) const {
  WaitPolicy policy;
  policy.spin = std::min(Spin(), most);
  policy.oversubscribed = oversubscribed_;
  policy.deadline = std::chrono::steady_clock::now() + most;
  return WaitForChange(header_, policy, ready, [this] { return GroupFailed(); }, [this] { return DaemonGone(); }) ==
         WaitOutcome::kReady;
}

}  // namespace ohio
