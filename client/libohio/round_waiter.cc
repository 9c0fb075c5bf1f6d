#include "client/libohio/round_waiter.h"

#include <poll.h>

#include <cstring>

#include "client/libohio/daemon_process.h"

namespace ohio {

Status RoundWaiter::GroupError() const {
  return Status(static_cast<Code>(header_->group_error_code.load(std::memory_order_relaxed)),
                std::string(header_->group_error, strnlen(header_->group_error, kErrorMessageBytes)));
}

bool RoundWaiter::DaemonGone() const {
  // Only a hang-up: the connection is the process's, shared by its groups, and while this
  // group's call waits another thread's join or leave may have its answer waiting unread on it
  // (MPI_THREAD_MULTIPLE). The daemon's close shows as a hang-up whatever it left unread.
  struct pollfd p = {control_fd_, POLLRDHUP, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

bool RoundWaiter::DaemonStopped() const { return ProcessStopped(daemon_pid_); }

Status RoundWaiter::Overdue(std::chrono::steady_clock::time_point since, const char* who, const char* what) const {
  const auto waited = std::chrono::steady_clock::now() - since;
  if (waited < timeout_) return Status::Ok();
  // /proc is read only once the timeout has passed: the looks before cost nothing.
  const bool stopped = DaemonStopped();
  if (!stopped && waited < timeout_ + grace_) return Status::Ok();
  return Outcome(WaitOutcome::kTimedOut, stopped ? timeout_ : timeout_ + grace_, who, what, /*daemon_needed=*/true);
}

Status RoundWaiter::Outcome(WaitOutcome outcome, std::chrono::milliseconds waited, const char* who,
                            const char* what, bool daemon_needed) const {
  if (GroupFailed()) return GroupError();
  if (outcome == WaitOutcome::kStopped) return Status(Code::kDaemonLost, "the connection to ohiod closed");
  std::string message = std::string(who) + " did not " + what + " within " + std::to_string(waited.count()) + " ms";
  // A wait for the other ranks says nothing of a daemon it cannot look at: it did not need it.
  if (daemon_needed || daemon_pid_ != 0) message += DaemonStateNote(daemon_pid_);
  return Status(Code::kTimeout, message);
}

}  // namespace ohio
