// The thread that drives every group's collectives across nodes. It owns the daemon's stores
// into group segments: the control thread hands it groups and membership changes through a
// queue. It spins for a short while after work, then sleeps in epoll on the groups' doorbells,
// waking at least every kTimeoutTick while a round is under way so that round timeouts fire.
// Groups on one node run without it: it looks in on them at every tick (RoundDriver::Watch).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/spin_mode.h"
#include "common/status.h"
#include "daemon/engine/counters.h"
#include "daemon/engine/group.h"
#include "daemon/engine/staging_ledger.h"

namespace ohio {

class ProgressEngine {
 public:
  // `transport` carries multi-node groups' data; its completions are handled on this thread.
  // `spin`: how long to poll after work before sleeping. `round_spin`: the same while a round
  // spanning nodes is under way and the node has a core to spare (PollNow). `node_cpus`: the
  // CPUs the node counts as its own (the `cpus` setting), which decide whether it spins.
  // `ledger`: where the nonblocking calls it moves on one node take their staging.
  ProgressEngine(std::chrono::microseconds spin, std::chrono::microseconds round_spin, double node_cpus,
                 DaemonCounters* counters, Transport* transport, StagingLedger* ledger);
  ~ProgressEngine();

  Status Start();
  // Fails every group still open with `reason`, then stops the thread.
  void Stop(const std::string& reason);

  void AddGroup(std::shared_ptr<Group> group);
  // Local rank `local` of the group went away: `clean` for a LeaveGroup, false for a
  // connection that closed without one. A clean leave of a group on one node does not wake the
  // engine: it is applied at the engine's next pass, which comes at its next tick (an open group
  // on one node is watched at every tick) or with the group's removal, whichever is first.
  void MemberGone(std::shared_ptr<Group> group, uint32_t local, bool clean, std::string who);
  void RemoveGroup(std::shared_ptr<Group> group);
  // From the peer bootstrap: what node `node` said of the group, or why it could not be opened.
  void PeerInfo(std::shared_ptr<Group> group, uint32_t node, PeerGroupInfo info);
  void FailGroup(std::shared_ptr<Group> group, Status why);
  // Node `node` of the group said it failed there, with `why` (the peer service).
  void FailedOnPeer(std::shared_ptr<Group> group, std::string node, Status why);
  // Called on the engine thread with every group spanning nodes that fails here for a reason
  // of this node's own (RoundDriver::TakeFailureToTell), to tell its other nodes. Set once, before
  // the first such group exists.
  void set_on_failed_here(std::function<void(std::shared_ptr<Group>)> f) {
    std::lock_guard<std::mutex> lock(mu_);
    on_failed_here_ = std::move(f);
  }

  // Whether the engine thread takes a command within `deadline`: what the watchdog and the
  // health check mean by "the daemon still works".
  bool Ping(std::chrono::milliseconds deadline);
  // A new spin time (SIGHUP), taken from the next idle moment on.
  void set_spin(std::chrono::microseconds spin, std::chrono::microseconds round_spin) {
    spin_us_.store(spin.count(), std::memory_order_relaxed);
    round_spin_us_.store(round_spin.count(), std::memory_order_relaxed);
  }

 private:
  struct Command {
    enum class Kind { kAdd, kMemberGone, kRemove, kPeerInfo, kFail, kFailedOnPeer, kPing } kind = Kind::kAdd;
    std::shared_ptr<Group> group;
    uint32_t local = 0;  // kMemberGone: local rank; kPeerInfo: node
    bool clean = false;
    std::string who;  // kMemberGone; kFailedOnPeer: the node
    PeerGroupInfo info;
    Status why;
    std::shared_ptr<std::promise<void>> pong;  // kPing
  };

  // Queues c; `wake`: the engine is woken to apply it now, not at its next pass.
  void Post(Command c, bool wake = true);
  void Run();
  // Applies queued commands; true if one may bring work at once (a group spanning nodes added,
  // told of a peer, or removed), after which the engine spins before it sleeps.
  bool Drain();
  bool AdvanceAll();
  bool HandleTransport();
  // Hands the group to on_failed_here_ if it has just failed for a reason of this node's own.
  void TellIfFailedHere(const std::shared_ptr<Group>& g);
  // The round driver of the open or draining group spanning nodes whose tag here is `tag`.
  RoundDriver* ByTag(uint32_t tag);
  // Progresses removed groups' last sends; frees those that are done. True if anything moved.
  bool ReleaseDrained();
  void SetSleeping(uint32_t value);
  int NextWakeMs() const;

  static constexpr std::chrono::milliseconds kTimeoutTick{100};

  // How the engine polls when a pass found nothing to do (common/spin_mode.h's ChooseEnginePoll),
  // with every open group's ranks on this node plus the engine as the processes that want a CPU.
  EnginePoll PollNow() const;

  std::atomic<int64_t> spin_us_;
  std::atomic<int64_t> round_spin_us_;
  const double node_cpus_;
  std::chrono::steady_clock::time_point next_watch_;  // of groups on one node
  StagingLedger* ledger_;
  // Fair progress: in one pass each uid moves at most one slice of its nonblocking calls on one
  // node, whatever its number of groups, and the pass starts one group further each time, so a
  // uid's groups take turns. Another uid's call then waits for at most one slice of each.
  std::vector<uid_t> sliced_uids_;  // of the pass under way
  size_t first_group_ = 0;
  // When more than one uid last had calls to move in a pass, and for how long slices stay short.
  std::chrono::steady_clock::time_point shared_at_{};
  static constexpr std::chrono::milliseconds kSharedHold{50};
  DaemonCounters* counters_;
  Transport* transport_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;
  bool stopping_ = false;  // guarded by mu_
  std::string stop_reason_;

  std::mutex mu_;
  std::deque<Command> queue_;
  std::function<void(std::shared_ptr<Group>)> on_failed_here_;  // guarded by mu_

  std::vector<std::shared_ptr<Group>> groups_;  // engine thread only
  std::map<uint32_t, RoundDriver*> by_tag_;      // multi-node groups, engine thread only
  // Removed groups whose last round's sends are not all out: their SSB must outlive them.
  std::vector<std::shared_ptr<Group>> draining_;
  // The transport's events of one pass, reused so that a quiet pass allocates nothing.
  std::vector<TransportEvent> events_;
};

}  // namespace ohio
