// The transport's events out, and the engine woken for them. See event_outbox.h.
#include "daemon/transport/verbs/event_outbox.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <iterator>
#include <utility>

namespace ohio {

Result<std::unique_ptr<EventOutbox>> EventOutbox::Create() {
  const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return SystemError("eventfd", errno);
  return std::unique_ptr<EventOutbox>(new EventOutbox(fd));
}

EventOutbox::~EventOutbox() { close(wake_fd_); }

TransportEvent EventOutbox::Make(TransportEvent::Kind kind, PeerId peer) {
  TransportEvent e;
  e.kind = kind;
  e.peer = peer;
  return e;
}

void EventOutbox::Emit(TransportEvent e) {
  events_.push_back(std::move(e));
  if (!passing_) Wake();
}

void EventOutbox::Wake() {
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  woken_.store(true, std::memory_order_release);
}

void EventOutbox::TakeWake() {
  if (woken_.exchange(false, std::memory_order_acquire)) {
    uint64_t drained;
    (void)!read(wake_fd_, &drained, sizeof(drained));
  }
}

bool EventOutbox::DrainWake() {
  uint64_t drained = 0;
  return read(wake_fd_, &drained, sizeof(drained)) > 0;
}

void EventOutbox::TakeAll(std::vector<TransportEvent>* out) {
  if (events_.empty()) return;
  out->insert(out->end(), std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
  events_.clear();
}

}  // namespace ohio
