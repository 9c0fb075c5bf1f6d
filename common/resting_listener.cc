#include "common/resting_listener.h"

#include <sys/epoll.h>

namespace ohio {

void RestingListener::Rest(int epoll_fd, int listen_fd, Clock::time_point until) {
  struct epoll_event ev = {};  // no events: still in the set, never reported
  epoll_ctl(epoll_fd, EPOLL_CTL_MOD, listen_fd, &ev);
  resting_ = true;
  until_ = until;
}

void RestingListener::WakeIfDue(int epoll_fd, int listen_fd, uint64_t tag, Clock::time_point now) {
  if (!resting_ || now < until_) return;
  struct epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.u64 = tag;
  epoll_ctl(epoll_fd, EPOLL_CTL_MOD, listen_fd, &ev);
  resting_ = false;
}

}  // namespace ohio
