// How a rank waits for anything in its group's segment (other ranks' arrivals, the daemon's
// deliveries): spin, then sleep on the event word (shm/event_word.h), giving up when the group
// fails, when the daemon's connection closes, or past the deadline, each with its own error.
#pragma once

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
  RoundWaiter(SegmentHeader* header, int control_fd, std::chrono::microseconds spin,
              std::chrono::milliseconds patience, bool oversubscribed)
      : header_(header), control_fd_(control_fd), spin_(spin), patience_(patience), oversubscribed_(oversubscribed) {}

  // Ok once ready() holds; else the group's error, kDaemonLost or kTimeout ("<who> did not
  // <what> within N ms").
  template <typename Ready>
  Status Wait(Ready ready, const char* who, const char* what) const;

  bool GroupFailed() const {
    return header_->state.load(std::memory_order_acquire) != static_cast<uint32_t>(GroupState::kOpen);
  }
  Status GroupError() const;
  bool DaemonGone() const;

 private:
  Status Outcome(WaitOutcome outcome, const char* who, const char* what) const;

  SegmentHeader* header_ = nullptr;
  int control_fd_ = -1;
  std::chrono::microseconds spin_{20};
  std::chrono::milliseconds patience_{0};
  bool oversubscribed_ = false;
};

template <typename Ready>
Status RoundWaiter::Wait(Ready ready, const char* who, const char* what) const {
  WaitPolicy policy;
  policy.spin = spin_;
  policy.oversubscribed = oversubscribed_;
  policy.deadline = std::chrono::steady_clock::now() + patience_;
  const WaitOutcome outcome = WaitForChange(
      header_, policy, ready, [this] { return GroupFailed(); }, [this] { return DaemonGone(); });
  return outcome == WaitOutcome::kReady ? Status::Ok() : Outcome(outcome, who, what);
}

}  // namespace ohio
