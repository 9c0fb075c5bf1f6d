#include "daemon/engine/progress_engine.h"

#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <spdlog/spdlog.h>

#include "common/cpu_relax.h"
#include "common/spin_mode.h"
#include "daemon/exchange/put_decoding.h"
#include "shm/segment_layout.h"

namespace ohio {
namespace {

void DrainEventFd(int fd) {
  uint64_t v;
  while (read(fd, &v, sizeof(v)) == sizeof(v)) {
  }
}

// What the ranks of a group are told when a peer's connection is down: a link that never came
// up (a refused dial, a rail that does not reach its peer's) was not lost.
std::string PeerDownText(const std::string& node, const TransportEvent& e) {
  return e.never_up ? "the data connection to node " + node + "'s ohiod never came up"
                    : "lost the connection to node " + node + "'s ohiod";
}

}  // namespace

ProgressEngine::~ProgressEngine() {
  if (thread_.joinable()) Stop("ohiod is shutting down");
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

Status ProgressEngine::Start() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return SystemError("epoll_create1", errno);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return SystemError("eventfd", errno);
  struct epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) return SystemError("epoll_ctl", errno);
  if (transport_ != nullptr) {
    ev.data.ptr = transport_;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, transport_->event_fd(), &ev) != 0) return SystemError("epoll_ctl", errno);
  }
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void ProgressEngine::Stop(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    stop_reason_ = reason;
  }
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
}

void ProgressEngine::Post(Command c, bool wake) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(c));
  }
  if (!wake) return;
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

void ProgressEngine::AddGroup(std::shared_ptr<Group> group) {
  Command c;
  c.kind = Command::Kind::kAdd;
  c.group = std::move(group);
  Post(std::move(c));
}

void ProgressEngine::MemberGone(std::shared_ptr<Group> group, uint32_t local, bool clean, std::string who) {
  Command c;
  c.kind = Command::Kind::kMemberGone;
  c.group = std::move(group);
  c.local = local;
  c.clean = clean;
  c.who = std::move(who);
  // Each communicator's free would wake the engine once per local rank, about 25 us of its CPU
  // each, for nothing to do at once: the group's ranks are done with it.
  const bool wake = !clean || c.group->spans_nodes();
  Post(std::move(c), wake);
}

void ProgressEngine::PeerInfo(std::shared_ptr<Group> group, uint32_t node, PeerGroupInfo info) {
  Command c;
  c.kind = Command::Kind::kPeerInfo;
  c.group = std::move(group);
  c.local = node;
  c.info = info;
  Post(std::move(c));
}

void ProgressEngine::FailGroup(std::shared_ptr<Group> group, Status why) {
  Command c;
  c.kind = Command::Kind::kFail;
  c.group = std::move(group);
  c.why = std::move(why);
  Post(std::move(c));
}

void ProgressEngine::FailedOnPeer(std::shared_ptr<Group> group, std::string node, Status why) {
  Command c;
  c.kind = Command::Kind::kFailedOnPeer;
  c.group = std::move(group);
  c.who = std::move(node);
  c.why = std::move(why);
  Post(std::move(c));
}

void ProgressEngine::TellIfFailedHere(const std::shared_ptr<Group>& g) {
  if (!g->rounds().TakeFailureToTell()) return;
  std::function<void(std::shared_ptr<Group>)> tell;
  {
    std::lock_guard<std::mutex> lock(mu_);
    tell = on_failed_here_;
  }
  if (tell) tell(g);
}

bool ProgressEngine::Ping(std::chrono::milliseconds deadline) {
  Command c;
  c.kind = Command::Kind::kPing;
  c.pong = std::make_shared<std::promise<void>>();
  std::future<void> answered = c.pong->get_future();
  Post(std::move(c));
  return answered.wait_for(deadline) == std::future_status::ready;
}

void ProgressEngine::RemoveGroup(std::shared_ptr<Group> group) {
  Command c;
  c.kind = Command::Kind::kRemove;
  c.group = std::move(group);
  Post(std::move(c));
}

bool ProgressEngine::Drain() {
  std::deque<Command> commands;
  {
    std::lock_guard<std::mutex> lock(mu_);
    commands.swap(queue_);
  }
  // Whether a command may be followed at once by work for this thread: only for a group spanning
  // nodes (its peers' messages, its first rounds). A group on one node coming or going, a ping,
  // a failure, is bookkeeping; counted as progress it made the engine spin after every
  // communicator's set-up and free, about 75 us of a CPU each, while the ranks needed it.
  bool work_may_follow = false;
  for (Command& c : commands) {
    if (c.group != nullptr && c.group->spans_nodes() &&
        (c.kind == Command::Kind::kAdd || c.kind == Command::Kind::kPeerInfo || c.kind == Command::Kind::kRemove)) {
      work_may_follow = true;
    }
    switch (c.kind) {
      case Command::Kind::kAdd: {
        // As the group's ranks decide how they wait (client/libohio/group_handle.cc, MakeWaiter).
        RoundDriver& rounds = c.group->rounds();
        rounds.set_wake_for_each_eager_block(ChooseSpinMode(node_cpus_, c.group->local_ranks() + 1) ==
                                             SpinMode::kOwnCore);
        rounds.count_ranks_woken_in(&counters_->ranks_woken);
        struct epoll_event ev = {};
        ev.events = EPOLLIN;
        ev.data.ptr = c.group.get();
        if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c.group->doorbell_fd(), &ev) != 0) {
          spdlog::error("group {}: cannot watch its doorbell: errno {}", c.group->key_hex(), errno);
        }
        if (c.group->spans_nodes()) by_tag_[c.group->tag()] = &rounds;
        groups_.push_back(std::move(c.group));
        break;
      }
      case Command::Kind::kPeerInfo:
        c.group->rounds().SetPeer(c.local, c.info);
        break;
      case Command::Kind::kFail:
        if (!c.group->failed()) {
          spdlog::warn("group {}: {}", c.group->key_hex(), c.why.message());
          c.group->rounds().Fail(c.why.code(), c.why.message() + "; the group is closed", counters_);
        }
        break;
      case Command::Kind::kFailedOnPeer:
        if (!c.group->failed()) {
          spdlog::warn("group {}: failed on node {}: {}", c.group->key_hex(), c.who, c.why.message());
          c.group->rounds().FailedOnNode(c.who, c.why, counters_);
        }
        break;
      case Command::Kind::kMemberGone: {
        Group& g = *c.group;
        const std::string why = g.Departure(c.local, c.clean, c.who);
        if (auto failure = g.rounds().Depart(c.local, why, c.clean, counters_)) {
          spdlog::warn("group {}: {}", g.key_hex(), *failure);
        } else if (!c.clean) {
          spdlog::info("group {}: {}", g.key_hex(), why);
        }
        break;
      }
      case Command::Kind::kPing:
        // What ranks counted in their segments (a group on one node its calls, every group the
        // calls it handed to the MPI library) is in the counters once answered.
        for (auto& g : groups_) g->rounds().FoldCallStats(counters_);
        c.pong->set_value();
        break;
      case Command::Kind::kRemove: {
        // Its ranks may have finished a round and left before this thread saw it: finish it
        // (so the call is counted) before the group goes.
        if (!c.group->failed()) c.group->rounds().Advance(Group::Clock::now(), counters_);
        TellIfFailedHere(c.group);
        c.group->rounds().FoldCallStats(counters_);
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.group->doorbell_fd(), nullptr);
        groups_.erase(std::remove(groups_.begin(), groups_.end(), c.group), groups_.end());
        if (c.group->spans_nodes()) {
          // Keeps its tag (and so its messages and completions) until its last sends are out.
          draining_.push_back(std::move(c.group));
          ReleaseDrained();
        }
        break;
      }
    }
  }
  return work_may_follow;
}

RoundDriver* ProgressEngine::ByTag(uint32_t tag) {
  auto it = by_tag_.find(tag);
  return it == by_tag_.end() ? nullptr : it->second;
}

bool ProgressEngine::ReleaseDrained() {
  bool changed = false;
  const auto now = Group::Clock::now();
  for (auto& g : draining_) {
    // Its ranks are gone, done with their last round: only sends remain, and finishing the
    // round (which counts the call) once they are out.
    if (!g->failed()) changed |= g->rounds().Advance(now, counters_);
  }
  auto done = [](const std::shared_ptr<Group>& g) { return g->rounds().drained(); };
  for (auto& g : draining_) {
    if (!done(g)) continue;
    auto t = by_tag_.find(g->tag());
    if (t != by_tag_.end() && t->second == &g->rounds()) by_tag_.erase(t);
  }
  draining_.erase(std::remove_if(draining_.begin(), draining_.end(), done), draining_.end());
  return changed;
}

bool ProgressEngine::HandleTransport() {
  if (transport_ == nullptr) return false;
  events_.clear();
  transport_->Poll(&events_);
  for (TransportEvent& e : events_) {
    switch (e.kind) {
      case TransportEvent::Kind::kArrived: {
        const DecodedPut put = DecodeLandedPut(e.imm);
        RoundDriver* g = ByTag(put.tag);
        // Payload only: an eager put's header is the exchange's, not the ranks', and count
        // tables (a failed alltoallv's) and block sizes (a hypercube alltoallv's) are no data
        // of theirs either.
        counters_->bytes_received.fetch_add(PayloadBytes(put, e.bytes, g != nullptr ? g->nodes() : 0),
                                            std::memory_order_relaxed);
        if (g != nullptr) g->OnLanded(e.peer, put);
        break;
      }
      case TransportEvent::Kind::kPutDone: {
        const DecodedPut put = DecodeCompletedPut(e.cookie);
        RoundDriver* g = ByTag(put.tag);
        counters_->bytes_sent.fetch_add(PayloadBytes(put, e.bytes, g != nullptr ? g->nodes() : 0),
                                        std::memory_order_relaxed);
        if (g != nullptr) g->OnPutDone(put);
        break;
      }
      case TransportEvent::Kind::kMessage: {
        auto m = ExchangeMessage::Decode(e.message.data(), e.message_bytes);
        if (!m) {
          spdlog::warn("malformed exchange message from node {}", transport_->PeerName(e.peer));
          break;
        }
        RoundDriver* g = ByTag(m->tag);
        if (g != nullptr) g->OnMessage(e.peer, *m, counters_);
        break;
      }
      case TransportEvent::Kind::kPeerDown: {
        const std::string node = transport_->PeerName(e.peer);
        const std::string message = PeerDownText(node, e) + " (" + e.reason + "); the group is closed";
        for (auto& g : groups_) {
          if (g->rounds().OnPeerDown(e.peer, message, counters_)) spdlog::warn("group {}: {}", g->key_hex(), message);
        }
        // Their puts to it will never complete, and nothing may wait for them.
        for (auto& d : draining_) d->rounds().OnPeerDown(e.peer, PeerDownText(node, e), counters_);
        break;
      }
    }
  }
  return !events_.empty();
}

bool ProgressEngine::AdvanceAll() {
  bool progressed = false;
  const auto now = Group::Clock::now();
  // Groups on one node run without the engine: it only looks in on them now and then.
  const bool watch = now >= next_watch_;
  if (watch) next_watch_ = now + kTimeoutTick;
  sliced_uids_.clear();
  const size_t n = groups_.size();
  if (n != 0) first_group_ = (first_group_ + 1) % n;
  // Nonblocking calls on one node are the engine's to move, as soon as every rank has started
  // them: one slice per uid and pass (sliced_uids_). Calls that begin go before calls under
  // way, so a small call (one slice) waits for at most the slice being copied, not for every
  // other uid's next slice too.
  // Slices are short while more than one uid has had calls to move lately: a job's next call
  // comes a moment after its last, and should not find a long slice under way.
  const uint64_t slice_bytes = now - shared_at_ < kSharedHold ? NonblockingAlltoall::kSharedSliceBytes
                                                              : NonblockingAlltoall::kSliceBytes;
  std::vector<uid_t> waiting;  // uids with calls to move in this pass
  auto slice = [&](const std::shared_ptr<Group>& g) {
    if (std::find(waiting.begin(), waiting.end(), g->owner()) == waiting.end()) waiting.push_back(g->owner());
    const uid_t uid = g->owner();
    if (std::find(sliced_uids_.begin(), sliced_uids_.end(), uid) != sliced_uids_.end()) {
      if (g->rounds().nonblocking_waiting()) progressed = true;  // its uid had its slice: the next pass comes at once
      return;
    }
    if (g->rounds().AdvanceNonblocking(counters_, ledger_, slice_bytes)) {
      sliced_uids_.push_back(uid);
      progressed = true;
    }
  };
  for (size_t i = 0; i < n; ++i) {
    const std::shared_ptr<Group>& g = groups_[(first_group_ + i) % n];
    if (!g->spans_nodes() && g->rounds().nonblocking_beginning()) slice(g);
  }
  for (size_t i = 0; i < n; ++i) {
    const std::shared_ptr<Group>& g = groups_[(first_group_ + i) % n];
    if (g->spans_nodes()) {
      progressed |= g->rounds().Advance(now, counters_);
      TellIfFailedHere(g);
    } else {
      if (g->rounds().nonblocking_moving()) slice(g);
      if (watch) progressed |= g->rounds().Watch(now, counters_);
    }
  }
  if (waiting.size() > 1) shared_at_ = now;
  return progressed;
}

void ProgressEngine::SetSleeping(uint32_t value) {
  for (auto& g : groups_) {
    // Paired with the ranks' publish-then-check: either we see their store after this
    // fence, or they see the flag and ring the doorbell.
    g->header()->daemon_sleeping.store(value, std::memory_order_seq_cst);
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

int ProgressEngine::NextWakeMs() const {
  for (const auto& g : groups_) {
    // A group on one node is watched at every tick while it is open: nothing tells the engine
    // when its ranks start waiting for each other.
    if (g->rounds().busy() || g->rounds().started_calls_pending() || (!g->spans_nodes() && !g->failed())) {
      return static_cast<int>(kTimeoutTick.count());
    }
  }
  if (!draining_.empty()) return static_cast<int>(kTimeoutTick.count());
  return -1;
}

ProgressEngine::ProgressEngine(std::chrono::microseconds spin, std::chrono::microseconds round_spin,
                               double node_cpus, DaemonCounters* counters, Transport* transport,
                               StagingLedger* ledger)
    : spin_us_(spin.count()),
      round_spin_us_(round_spin.count()),
      node_cpus_(node_cpus),
      ledger_(ledger),
      counters_(counters),
      transport_(transport) {}

EnginePoll ProgressEngine::PollNow() const {
  bool mid_round = false;
  bool ranks_may_wait = false;
  uint32_t ranks = 0;
  for (const auto& g : groups_) {
    if (g->failed()) continue;
    mid_round |= g->rounds().busy();
    ranks_may_wait |= g->rounds().ranks_may_wait_on_engine();
    ranks += g->local_ranks();
  }
  return ChooseEnginePoll(ChooseSpinMode(node_cpus_, ranks + 1), mid_round, ranks_may_wait,
                          spin_us_.load(std::memory_order_relaxed), round_spin_us_.load(std::memory_order_relaxed));
}

void ProgressEngine::Run() {
  auto last_work = std::chrono::steady_clock::now();
  std::vector<struct epoll_event> events(64);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) break;
    }
    bool progressed = Drain();
    progressed |= HandleTransport();
    progressed |= AdvanceAll();
    if (!draining_.empty()) progressed |= ReleaseDrained();
    const auto now = std::chrono::steady_clock::now();
    if (progressed) {
      last_work = now;
      // A pass that moved slices of nonblocking calls on one node may be followed by many
      // more: let whatever else wants this CPU run between them (the ranks of another job,
      // which otherwise share the other cores with everything else while this one copies).
      if (!sliced_uids_.empty()) sched_yield();
      continue;
    }
    const EnginePoll spin = PollNow();
    if (now - last_work < std::chrono::microseconds(spin.budget_us)) {
      for (int i = 0; i < 64; ++i) CpuRelax();
      // Oversubscribed: let a rank that shares this core run, it is what we wait for. With a
      // core to spare, keep it: a landing block or an arrival is taken at once.
      if (spin.yield) sched_yield();
      continue;
    }
    SetSleeping(1);
    // The transport arms its notifications; work that came meanwhile is taken, not slept on.
    if (AdvanceAll() || (transport_ != nullptr && !transport_->PrepareToSleep())) {
      SetSleeping(0);
      last_work = std::chrono::steady_clock::now();
      continue;
    }
    counters_->engine_sleeps.fetch_add(1, std::memory_order_relaxed);
    int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), NextWakeMs());
    SetSleeping(0);
    bool by_data = false;  // not only a command (a join, an admin request)
    for (int i = 0; i < n; ++i) {
      if (events[i].data.ptr == nullptr) {
        DrainEventFd(wake_fd_);
        continue;
      }
      by_data = true;
      // The transport's events are taken by HandleTransport on the next pass.
      if (events[i].data.ptr != transport_) DrainEventFd(static_cast<Group*>(events[i].data.ptr)->doorbell_fd());
    }
    // Woken by data, the engine spins a while after the pass it makes for it: more tends to
    // follow. Woken by a command only, it does not: the pass applies it, and a command rarely
    // comes with work (Drain says when one may).
    if (by_data) {
      counters_->engine_wakeups.fetch_add(1, std::memory_order_relaxed);
      last_work = std::chrono::steady_clock::now();
    }
  }
  Drain();
  size_t left_to_ranks = 0;
  for (auto& g : groups_) {
    // A group on one node needs no daemon for its blocking calls: its ranks meet in its segment
    // (client/libohio/round_waiter.h). Failing it here would race the round its ranks are in: a
    // rank still waiting for the last arrival would take the failure while the rank arriving
    // last completes the round, and the call would be split between them with nothing kept to
    // send it again. Left alone it goes on as after this daemon is killed: blocking calls among
    // its ranks; a nonblocking call, which this daemon moves, finds it gone in its wait.
    if (!g->spans_nodes() && !g->failed()) {
      ++left_to_ranks;
      continue;
    }
    g->rounds().Fail(Code::kGroupFailed, stop_reason_, counters_);
  }
  if (left_to_ranks != 0) {
    spdlog::info("{} group(s) on this node alone go on among their ranks without ohiod", left_to_ranks);
  }
  groups_.clear();
}

}  // namespace ohio
