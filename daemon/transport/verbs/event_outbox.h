// The verbs transport's events on their way out to the progress engine (TransportEvent: a put
// done, data or a message arrived, a peer lost), and the eventfd that wakes an engine asleep on
// event_fd() when one is emitted from outside its pass, or when work arrives from another thread
// (a region registered).
//
// Locks: the events and whether a pass is on are guarded by the transport's lock
// (VerbsTransport::mu_): Emit, BeginPass, EndPass, empty and TakeAll are called under it. Wake
// and the wake-ups taken touch only the eventfd and an atomic, from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "common/status.h"
#include "daemon/transport/transport.h"

namespace ohio {

class EventOutbox {
 public:
  static Result<std::unique_ptr<EventOutbox>> Create();
  ~EventOutbox();
  EventOutbox(const EventOutbox&) = delete;
  EventOutbox& operator=(const EventOutbox&) = delete;

  // What the engine's epoll waits on, besides the completion channels.
  int wake_fd() const { return wake_fd_; }
  // An event of `kind` about `peer`; the rest is the caller's to fill.
  static TransportEvent Make(TransportEvent::Kind kind, PeerId peer);

  // Out with the pass under way, or with the next one, which it wakes.
  void Emit(TransportEvent e);
  // The engine passes again, asleep or not.
  void Wake();
  // At a pass's start: the wake-up taken only when one was written, so that a spinning
  // engine's pass makes no system call.
  void TakeWake();
  // Before sleeping: the wake-up taken whatever the flag says; whether there was one (a
  // wake-up written after the last pass means work).
  bool DrainWake();

  // Between them the engine is passing: what is emitted goes out with the pass, waking no one.
  void BeginPass() { passing_ = true; }
  void EndPass() { passing_ = false; }
  bool empty() const { return events_.empty(); }
  // Everything emitted since the last time, appended to `out`.
  void TakeAll(std::vector<TransportEvent>* out);

 private:
  explicit EventOutbox(int wake_fd) : wake_fd_(wake_fd) {}

  const int wake_fd_;
  // Set after wake_fd_ is written: a pass reads the eventfd only then, not every time.
  std::atomic<bool> woken_{false};
  std::vector<TransportEvent> events_;
  bool passing_ = false;
};

}  // namespace ohio
