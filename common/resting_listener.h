// A listening socket taken out of its epoll set for a while. Out of descriptors, a
// level-triggered listener with connections pending wakes its loop at once again and the loop
// spins; so it rests (ohiod's control socket and data port, with a DescriptorReserve shedding
// what is pending) and comes back when the rest is over.
#pragma once

#include <chrono>
#include <cstdint>

namespace ohio {

class RestingListener {
 public:
  using Clock = std::chrono::steady_clock;

  // Takes `listen_fd` out of `epoll_fd`'s events until `until`.
  void Rest(int epoll_fd, int listen_fd, Clock::time_point until);
  // Puts it back (EPOLLIN, with `tag`) once its rest is over.
  void WakeIfDue(int epoll_fd, int listen_fd, uint64_t tag, Clock::time_point now);
  bool resting() const { return resting_; }
  Clock::time_point until() const { return until_; }

 private:
  bool resting_ = false;
  Clock::time_point until_{};
};

}  // namespace ohio
