#include "daemon/progress_engine.h"

#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <spdlog/spdlog.h>

#include "shm/segment_layout.h"

namespace ohio {
namespace {

void DrainEventFd(int fd) {
  uint64_t v;
  while (read(fd, &v, sizeof(v)) == sizeof(v)) {
  }
}

inline void CpuRelax() { __builtin_ia32_pause(); }

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

void ProgressEngine::Post(Command c) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(c));
  }
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
  Post(std::move(c));
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
  for (Command& c : commands) {
    switch (c.kind) {
      case Command::Kind::kAdd: {
        struct epoll_event ev = {};
        ev.events = EPOLLIN;
        ev.data.ptr = c.group.get();
        if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c.group->doorbell_fd(), &ev) != 0) {
          spdlog::error("group {}: cannot watch its doorbell: errno {}", c.group->key_hex(), errno);
        }
        groups_.push_back(std::move(c.group));
        break;
      }
      case Command::Kind::kMemberGone: {
        Group& g = *c.group;
        const uint32_t rank = g.group_rank(c.local);
        if (g.failed()) break;
        const bool interrupts = !g.RankIdle(c.local) || g.busy();
        const std::string how = c.clean ? "left the group" : "disconnected from ohiod without leaving the group";
        const std::string message = "rank " + std::to_string(rank) + " (" + c.who + ") " + how +
                                    (interrupts ? " during an alltoall" : "") + "; the group is closed";
        if (interrupts || !c.clean) {
          spdlog::warn("group {}: {}", g.key_hex(), message);
          if (interrupts) counters_->collectives_failed.fetch_add(1, std::memory_order_relaxed);
        } else {
          spdlog::debug("group {}: {}", g.key_hex(), message);
        }
        g.Fail(Code::kGroupFailed, message, counters_);
        break;
      }
      case Command::Kind::kRemove: {
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.group->doorbell_fd(), nullptr);
        groups_.erase(std::remove(groups_.begin(), groups_.end(), c.group), groups_.end());
        break;
      }
    }
  }
  return !commands.empty();
}

bool ProgressEngine::AdvanceAll() {
  bool progressed = false;
  const auto now = Group::Clock::now();
  for (auto& g : groups_) progressed |= g->Advance(now, counters_);
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
    if (g->busy()) return static_cast<int>(kTimeoutTick.count());
  }
  return -1;
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
    progressed |= AdvanceAll();
    const auto now = std::chrono::steady_clock::now();
    if (progressed) {
      last_work = now;
      continue;
    }
    if (now - last_work < spin_) {
      // Between polls, let a rank that shares this core run: it is what we wait for.
      for (int i = 0; i < 64; ++i) CpuRelax();
      sched_yield();
      continue;
    }
    SetSleeping(1);
    if (AdvanceAll()) {
      SetSleeping(0);
      last_work = std::chrono::steady_clock::now();
      continue;
    }
    int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), NextWakeMs());
    SetSleeping(0);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.ptr == nullptr) {
        DrainEventFd(wake_fd_);
      } else {
        DrainEventFd(static_cast<Group*>(events[i].data.ptr)->doorbell_fd());
      }
    }
    last_work = std::chrono::steady_clock::now();
  }
  Drain();
  for (auto& g : groups_) g->Fail(Code::kGroupFailed, stop_reason_, counters_);
  groups_.clear();
}

}  // namespace ohio
