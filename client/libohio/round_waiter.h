// How a rank waits for anything in its group's segment (other ranks' arrivals, the daemon's
// deliveries): spin, then sleep on the event word (shm/segment_change.h), giving up when the group
// fails, when the daemon's connection closes, or past the deadline, each with its own error.
//
// The deadline is the group's timeout, and then a grace for the daemon, whose own timer runs
// as long, to fail the group and say why (which rank or node it waited for) before the rank
// gives up with less to say. A daemon found stopped at the timeout (client/libohio/daemon_process.h)
// will say nothing: the wait ends then.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "common/spin_mode.h"
#include "common/status.h"
#include "shm/segment_change.h"
#include "shm/segment_layout.h"

namespace ohio {

class RoundWaiter {
 public:
  RoundWaiter() = default;
  // `control_fd` is the rank's connection to ohiod, `daemon_pid` the daemon's (0: unknown).
  // Every single wait lasts at most `timeout` plus `grace` (only `timeout` while the daemon is
  // stopped). `oversubscribed`: more ranks of the group on this node than cores this process
  // may run on.
  // A wait spins at least `min_spin` (0: never spins) and at most `max_spin` before it sleeps:
  // within that range, twice the rank's typical call time (NoteCall). A wait inside a call
  // seldom lasts longer than a call, and a sleep costs the sleeper a wake-up delay and its
  // waker a system call, which for calls shorter than a millisecond was most of what made them
  // slower than Open MPI's; a higher floor turned that around (docs/investigations/fast-path.md
  // has the figures).
  // `across_nodes`: the group spans nodes, so its waits are for the network and the daemons; on
  // an oversubscribed node a rank whose calls are long then sleeps at once (common/spin_mode.h
  // RankSpinUs).
  RoundWaiter(SegmentHeader* header, int control_fd, pid_t daemon_pid, std::chrono::microseconds min_spin,
              std::chrono::microseconds max_spin, std::chrono::milliseconds timeout, std::chrono::milliseconds grace,
              bool oversubscribed, bool across_nodes)
      : header_(header),
        control_fd_(control_fd),
        daemon_pid_(daemon_pid),
        min_spin_(min_spin),
        max_spin_(std::max(min_spin, max_spin)),
        timeout_(timeout),
        grace_(grace),
        oversubscribed_(oversubscribed),
        across_nodes_(across_nodes) {}

  // A call of this group took `took` on this rank: the typical call time follows it.
  void NoteCall(std::chrono::nanoseconds took) { typical_call_ns_ += (took.count() - typical_call_ns_) / 8; }
  // How long the next wait spins before it sleeps (common/spin_mode.h RankSpinUs).
  std::chrono::microseconds Spin() const {
    return std::chrono::microseconds(
        RankSpinUs(typical_call_ns_, min_spin_.count(), max_spin_.count(), oversubscribed_ && across_nodes_));
  }

  // Ok once ready() holds; else the group's error, kDaemonLost or kTimeout ("<who> did not
  // <what> within N ms", and that ohiod is stopped if it is, or that this cannot be told from
  // the rank's PID namespace: client/libohio/daemon_process.h DaemonStateNote).
  template <typename Ready>
  Status Wait(Ready ready, const char* who, const char* what) const {
    return WaitWithDaemon(ready, who, what, /*daemon_needed=*/true);
  }
  // The same for what only the other ranks of a group on one node do (arrive, read each
  // other's buffers): the daemon has no part in it, so its loss does not end the wait, and
  // ranks that have all arrived finish the call alike whether it lives or not. (A rank that
  // dies while the daemon is gone is seen at the timeout.)
  template <typename Ready>
  Status WaitForRanks(Ready ready, const char* who, const char* what) const {
    return WaitWithDaemon(ready, who, what, /*daemon_needed=*/false);
  }

  // For a wait made of many short looks (a nonblocking call's tests) that began at `since`:
  // ok while it is within the timeout (and the grace, while the daemon is not stopped); past
  // that, the error one Wait as long would have ended with (the group's error if it failed).
  Status Overdue(std::chrono::steady_clock::time_point since, const char* who, const char* what) const;

  // Whether ready() holds within `most` (spinning, then sleeping on the event word). False as
  // soon as the group fails or the daemon is gone: the caller asks the group which.
  template <typename Ready>
  bool WaitBriefly(Ready ready, std::chrono::microseconds most) const;

  bool GroupFailed() const {
    return header_->state.load(std::memory_order_acquire) != static_cast<uint32_t>(GroupState::kOpen);
  }
  Status GroupError() const;
  bool DaemonGone() const;
  // The daemon's process is stopped now (client/libohio/daemon_process.h).
  bool DaemonStopped() const;
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
  template <typename Ready>
  Status WaitWithDaemon(Ready ready, const char* who, const char* what, bool daemon_needed) const;
  Status Outcome(WaitOutcome outcome, std::chrono::milliseconds waited, const char* who, const char* what,
                 bool daemon_needed) const;

  SegmentHeader* header_ = nullptr;
  int control_fd_ = -1;
  pid_t daemon_pid_ = 0;
  std::chrono::microseconds min_spin_{20};
  std::chrono::microseconds max_spin_{1000};
  int64_t typical_call_ns_ = 0;  // a moving average over the last 8 or so calls
  std::chrono::milliseconds timeout_{0};
  std::chrono::milliseconds grace_{0};
  bool oversubscribed_ = false;
  bool across_nodes_ = false;
};

template <typename Ready>
Status RoundWaiter::WaitWithDaemon(Ready ready, const char* who, const char* what, bool daemon_needed) const {
  WaitPolicy policy;
  policy.spin = Spin();
  policy.oversubscribed = oversubscribed_;
  const auto start = std::chrono::steady_clock::now();
  policy.deadline = start + timeout_;
  const auto stop = [this] { return GroupFailed(); };
  const auto after_sleep = [this, daemon_needed] { return daemon_needed && DaemonGone(); };
  WaitOutcome outcome = WaitForChange(header_, policy, ready, stop, after_sleep);
  std::chrono::milliseconds waited = timeout_;
  if (outcome == WaitOutcome::kTimedOut && !DaemonStopped() && !DaemonGone()) {
    // A running daemon fails the group at its own timeout and says why: give it the grace.
    policy.spin = std::chrono::microseconds(0);
    policy.deadline = start + timeout_ + grace_;
    outcome = WaitForChange(header_, policy, ready, stop, after_sleep);
    waited = timeout_ + grace_;
  }
  return outcome == WaitOutcome::kReady ? Status::Ok() : Outcome(outcome, waited, who, what, daemon_needed);
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
