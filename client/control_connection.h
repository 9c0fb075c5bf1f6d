// A client's connection to ohiod: hello, join, leave. Blocking, one request at a time; the
// socket then stays open for the life of the process's groups, and its closing is how
// each side learns that the other is gone.
#pragma once

#include <mutex>
#include <string>

#include "common/status.h"
#include "proto/control.pb.h"

namespace ohio {

struct JoinedGroup {
  control::JoinReply reply;
  int segment_fd = -1;
  int doorbell_fd = -1;
};

class ControlConnection {
 public:
  ~ControlConnection();
  static Result<std::unique_ptr<ControlConnection>> Connect(const std::string& socket_path);

  const std::string& node_name() const { return node_name_; }
  int fd() const { return fd_; }

  Result<JoinedGroup> Join(const control::JoinGroup& join);
  Status Leave(const std::string& key);

 private:
  ControlConnection() = default;
  Result<control::DaemonMessage> Call(const control::ClientMessage& request, std::vector<int>* fds);

  int fd_ = -1;
  std::string node_name_;
  std::mutex mu_;
};

}  // namespace ohio
