// Drives transports from a test's own thread the way the progress engine does: Poll each one,
// and after a pass that brought nothing, PrepareToSleep and wait in epoll on their event fds.
// A paused transport is not polled at all, as if its engine were busy elsewhere (a slow
// reader). Every wait is bounded.
#pragma once

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "daemon/transport/transport.h"

namespace ohio {

class TransportDriver {
 public:
  using Clock = std::chrono::steady_clock;

  // One transport and the events taken from it that the test has not consumed yet.
  struct Endpoint {
    Transport* transport = nullptr;
    std::deque<TransportEvent> seen;
    bool paused = false;
  };

  TransportDriver() : epoll_fd_(epoll_create1(EPOLL_CLOEXEC)) {}
  ~TransportDriver() { close(epoll_fd_); }
  TransportDriver(const TransportDriver&) = delete;
  TransportDriver& operator=(const TransportDriver&) = delete;

  // The endpoint stays where it is until Remove.
  Endpoint* Add(Transport* t) {
    endpoints_.push_back(std::make_unique<Endpoint>());
    Endpoint* e = endpoints_.back().get();
    e->transport = t;
    Watch(e, true);
    return e;
  }
  // Before the transport is destroyed.
  void Remove(Endpoint* e) {
    Watch(e, false);
    endpoints_.erase(std::remove_if(endpoints_.begin(), endpoints_.end(),
                                    [e](const std::unique_ptr<Endpoint>& p) { return p.get() == e; }),
                     endpoints_.end());
  }
  void Pause(Endpoint* e) {
    if (!e->paused) Watch(e, false);
    e->paused = true;
  }
  void Resume(Endpoint* e) {
    if (e->paused) Watch(e, true);
    e->paused = false;
  }

  // Passes until done() holds (true) or the timeout passes (false).
  bool RunUntil(const std::function<bool()>& done, Clock::duration timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!done()) {
      const auto now = Clock::now();
      if (now >= deadline) return false;
      Pass(deadline, done);
    }
    return true;
  }

  // Passes for `how_long`, whatever happens.
  void RunFor(Clock::duration how_long) {
    RunUntil([] { return false; }, how_long);
  }

 private:
  void Watch(Endpoint* e, bool on) {
    struct epoll_event ev = {};
    ev.events = EPOLLIN;
    ev.data.ptr = e;
    epoll_ctl(epoll_fd_, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, e->transport->event_fd(), &ev);
  }

  // Polls every transport, then sleeps unless that brought events or settled done().
  void Pass(Clock::time_point deadline, const std::function<bool()>& done) {
    bool any = false;
    for (auto& e : endpoints_) {
      if (e->paused) continue;
      events_.clear();
      e->transport->Poll(&events_);
      any |= !events_.empty();
      for (auto& ev : events_) e->seen.push_back(std::move(ev));
    }
    if (any || done()) return;
    for (auto& e : endpoints_) {
      if (!e->paused && !e->transport->PrepareToSleep()) return;
    }
    // Short sleeps: a transport may rightly have nothing to say while its peer is paused.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    struct epoll_event ready[8];
    epoll_wait(epoll_fd_, ready, 8, static_cast<int>(std::clamp<int64_t>(left, 0, 20)));
  }

  int epoll_fd_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::vector<TransportEvent> events_;
};

}  // namespace ohio
