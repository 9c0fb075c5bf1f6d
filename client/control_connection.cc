#include "client/control_connection.h"

#include <unistd.h>


#include "common/framed_socket.h"
#include "common/unix_socket.h"
#include "common/version.h"

namespace ohio {
namespace {

constexpr size_t kMaxReplyBytes = 1 << 20;

Code CodeOf(control::Error::Code c) {
  switch (c) {
    case control::Error::INVALID_ARGUMENT: return Code::kInvalidArgument;
    case control::Error::GROUP_MISMATCH:
    case control::Error::PERMISSION:
    case control::Error::STATE: return Code::kRefused;
    case control::Error::NO_MEMORY: return Code::kNoMemory;
    case control::Error::GROUP_FAILED: return Code::kGroupFailed;
    case control::Error::NOT_SUPPORTED: return Code::kNotSupported;
    default: return Code::kProtocol;
  }
}

}  // namespace

ControlConnection::~ControlConnection() {
  if (fd_ >= 0) close(fd_);
}

Result<std::unique_ptr<ControlConnection>> ControlConnection::Connect(const std::string& socket_path) {
  std::unique_ptr<ControlConnection> c(new ControlConnection());
  auto fd = ConnectUnix(socket_path);
  if (!fd.ok()) return fd.status();
  c->fd_ = fd.value();
  control::ClientMessage hello;
  hello.mutable_hello()->set_protocol_version(kControlProtocolVersion);
  hello.mutable_hello()->set_client_version(kVersion);
  std::vector<int> fds;
  auto reply = c->Call(hello, &fds);
  if (!reply.ok()) return reply.status();
  if (!reply->has_hello()) return Status(Code::kProtocol, "ohiod did not answer Hello");
  c->node_name_ = reply->hello().node_name();
  return c;
}

Result<control::DaemonMessage> ControlConnection::Call(const control::ClientMessage& request,
                                                       std::vector<int>* fds) {
  std::lock_guard<std::mutex> lock(mu_);
  Status s = SendFrame(fd_, request.SerializeAsString());
  std::string payload;
  // A daemon that refuses a connection (too many clients) says why and closes it at once: the
  // send may fail, but the reason is still there to read.
  const Status sent = s;
  s = ReceiveFrame(fd_, kMaxReplyBytes, &payload, fds);
  if (!sent.ok() && !s.ok()) return Status(Code::kDaemonLost, sent.message());
  if (!s.ok()) return Status(s.code() == Code::kDaemonLost ? Code::kDaemonLost : Code::kProtocol,
                             "ohiod: " + s.message());
  control::DaemonMessage reply;
  if (!reply.ParseFromString(payload)) return Status(Code::kProtocol, "unparseable reply from ohiod");
  if (reply.has_error()) {
    for (int fd : *fds) close(fd);
    fds->clear();
    return Status(CodeOf(reply.error().code()), reply.error().message());
  }
  return reply;
}

Result<JoinedGroup> ControlConnection::Join(const control::JoinGroup& join) {
  control::ClientMessage m;
  *m.mutable_join() = join;
  std::vector<int> fds;
  auto reply = Call(m, &fds);
  if (!reply.ok()) return reply.status();
  if (!reply->has_join() || fds.size() != 2) {
    for (int fd : fds) close(fd);
    return Status(Code::kProtocol, "ohiod answered a join without a segment and a doorbell");
  }
  JoinedGroup g;
  g.reply = reply->join();
  g.segment_fd = fds[0];
  g.doorbell_fd = fds[1];
  return g;
}

Status ControlConnection::Leave(const std::string& key) {
  control::ClientMessage m;
  m.mutable_leave()->set_key(key);
  std::vector<int> fds;
  auto reply = Call(m, &fds);
  return reply.status();
}

}  // namespace ohio
