// A client's connection to ohiod: hello, join, leave. Blocking, one request at a time; the
// socket then stays open for the life of the process's groups, and its closing is how
// each side learns that the other is gone.
//
// Every call waits for its answer at most a timeout (the connect too): a hello or a join the one of
// SetupTimeout(), a leave the group's. A daemon that does not answer in time (stopped, hung)
// is given up on for good: the connection is shut down, so a late answer is never taken for
// the next call's, a daemon that comes back sees the process gone and releases its groups, and
// every later call fails at once with kDaemonLost saying why.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "proto/control.pb.h"
#include "shm/hand_back_page.h"
#include "shm/selection_notice.h"

namespace ohio {

struct JoinedGroup {
  control::JoinReply reply;
  int segment_fd = -1;
  int doorbell_fd = -1;
};

class ControlConnection {
 public:
  ~ControlConnection();
  // Connects, waiting at most SetupTimeout() for ohiod to take the connection off its listen
  // backlog (kTimeout: "ohiod did not accept the connection within N ms"), and says hello,
  // waiting as long again at most for the answer.
  static Result<std::unique_ptr<ControlConnection>> Connect(const std::string& socket_path);

  // How long a hello or a join waits for ohiod's answer, before any group (and its timeout)
  // exists: OHIO_TIMEOUT_MS, else ohiod's default timeout-ms (60 s). kInvalidArgument if the
  // variable is set to anything but a number of milliseconds above 0.
  static Result<std::chrono::milliseconds> SetupTimeout();

  const std::string& node_name() const { return node_name_; }
  int fd() const { return fd_; }
  // The daemon's pid (SO_PEERCRED), 0 if this process cannot see it.
  pid_t daemon_pid() const { return daemon_pid_; }

  // Waits at most SetupTimeout() for the answer.
  Result<JoinedGroup> Join(const control::JoinGroup& join);
  // Waits at most `within` (the group's timeout) for the answer.
  Status Leave(const std::string& key, std::chrono::milliseconds within);
  // The selection table the daemon gives new groups now (SelectionReply), for deciding calls
  // before any group is joined: the one the hello brought while the daemon's selection notice
  // shows the same generation (a load, no system call), else asked for again (waiting at most
  // SetupTimeout()). kNotSupported from a daemon that offers none (an older one). Every table
  // offered is kept as long as the connection (one per SIGHUP that changed it).
  Result<const control::SelectionReply*> Selection();
  // Adds `calls` to the daemon's count of calls of `function` handed to the MPI library for
  // `reason` (both in range), in this connection's hand-back page: no system call. kNotSupported
  // from a daemon that gave none.
  Status AddHandedBack(size_t function, size_t reason, uint64_t calls);
  // Gives up on the daemon (`why`: it did not do its part in time): as a call that timed out.
  void GiveUp(const Status& why);
  // True once the daemon has closed its end: it exited or was restarted, and whatever now
  // listens on the socket is another process. False while the connection is open, and for a
  // daemon given up on (stopped or hung: it would not answer a new connection either).
  bool ClosedByDaemon() const;

 private:
  ControlConnection() = default;
  // `what` names the request in errors ("ohiod did not answer leave within N ms").
  Result<control::DaemonMessage> Call(const control::ClientMessage& request, std::vector<int>* fds,
                                      const char* what, std::chrono::milliseconds within);
  // Set once the daemon was given up on; then every call returns it.
  Status GivenUp() const;

  int fd_ = -1;
  pid_t daemon_pid_ = 0;
  std::chrono::milliseconds setup_timeout_{0};
  std::string node_name_;
  std::mutex mu_;  // one call at a time
  // The daemon's selection notice and the table last offered (under selection_mu_, apart from
  // mu_ as the notice is read without a call).
  std::mutex selection_mu_;
  SelectionNotice notice_;
  HandBackPage hand_backs_;  // mapped with the notice, then only added to
  std::map<uint64_t, control::SelectionReply> selections_;  // by generation
  const control::SelectionReply* latest_ = nullptr;  // null: the daemon offered no table
  mutable std::mutex given_up_mu_;  // not mu_: a call may hold that until its deadline
  Status given_up_;
};

}  // namespace ohio
