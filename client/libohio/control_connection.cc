#include "client/libohio/control_connection.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include "client/libohio/daemon_process.h"
#include "common/framed_socket.h"
#include "common/unix_socket.h"
#include "common/version.h"

namespace ohio {
namespace {

constexpr size_t kMaxReplyBytes = 1 << 20;
// ohiod's own default timeout-ms, and the range it accepts for it.
constexpr std::chrono::milliseconds kDefaultSetupTimeout{60000};
constexpr unsigned long long kMaxTimeoutMs = 86400000;

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

Result<std::chrono::milliseconds> ControlConnection::SetupTimeout() {
  const char* v = std::getenv("OHIO_TIMEOUT_MS");
  if (v == nullptr) return kDefaultSetupTimeout;
  char* end = nullptr;
  const unsigned long long ms = std::strtoull(v, &end, 10);
  if (*v < '0' || *v > '9' || *end != '\0' || ms == 0 || ms > kMaxTimeoutMs) {
    return Status(Code::kInvalidArgument, "OHIO_TIMEOUT_MS must be a number of milliseconds from 1 to " +
                                              std::to_string(kMaxTimeoutMs) + ", not '" + v + "'");
  }
  return std::chrono::milliseconds(ms);
}

Result<std::unique_ptr<ControlConnection>> ControlConnection::Connect(const std::string& socket_path) {
  auto setup_timeout = SetupTimeout();
  if (!setup_timeout.ok()) return setup_timeout.status();
  std::unique_ptr<ControlConnection> c(new ControlConnection());
  c->setup_timeout_ = setup_timeout.value();
  // A daemon that is stopped or flooded leaves its listen backlog full: the connect itself is
  // bounded as the hello is.
  auto fd = ConnectUnixWithin(socket_path, c->setup_timeout_);
  if (!fd.ok()) return fd.status();
  c->fd_ = fd.value();
  c->daemon_pid_ = DaemonPid(c->fd_);
  control::ClientMessage hello;
  hello.mutable_hello()->set_protocol_version(kControlProtocolVersion);
  hello.mutable_hello()->set_client_version(kVersion);
  std::vector<int> fds;
  auto reply = c->Call(hello, &fds, "hello", c->setup_timeout_);
  if (!reply.ok()) return reply.status();
  if (!reply->has_hello()) {
    for (int fd : fds) close(fd);
    return Status(Code::kProtocol, "ohiod did not answer Hello");
  }
  c->node_name_ = reply->hello().node_name();
  if (reply->hello().has_selection() && fds.size() == 2) {
    auto notice = SelectionNotice::Map(fds[0]);  // each closes its descriptor
    auto hand_backs = HandBackPage::Map(fds[1]);
    fds.clear();
    if (!notice.ok()) return notice.status();
    if (!hand_backs.ok()) return hand_backs.status();
    c->notice_ = std::move(notice).value();
    c->hand_backs_ = std::move(hand_backs).value();
    const control::SelectionReply& offered = reply->hello().selection();
    c->latest_ = &c->selections_.emplace(offered.generation(), offered).first->second;
  }
  for (int fd : fds) close(fd);
  return c;
}

Result<const control::SelectionReply*> ControlConnection::Selection() {
  std::lock_guard<std::mutex> lock(selection_mu_);
  if (latest_ == nullptr) return Status(Code::kNotSupported, "ohiod offers no selection table before a group is joined");
  if (notice_.generation() == latest_->generation()) return latest_;
  control::ClientMessage m;
  m.mutable_get_selection();
  std::vector<int> fds;
  auto reply = Call(m, &fds, "the selection table's request", setup_timeout_);
  for (int fd : fds) close(fd);
  if (!reply.ok()) return reply.status();
  if (!reply->has_selection()) return Status(Code::kProtocol, "ohiod did not answer with its selection table");
  const control::SelectionReply& offered = reply->selection();
  latest_ = &selections_.emplace(offered.generation(), offered).first->second;
  return latest_;
}

Status ControlConnection::AddHandedBack(size_t function, size_t reason, uint64_t calls) {
  // Set once at connect, before any other thread has the connection.
  if (!hand_backs_.mapped()) return Status(Code::kNotSupported, "ohiod gave no hand-back page");
  hand_backs_.Add(function, reason, calls);
  return Status::Ok();
}

Status ControlConnection::GivenUp() const {
  std::lock_guard<std::mutex> lock(given_up_mu_);
  return given_up_;
}

bool ControlConnection::ClosedByDaemon() const {
  if (!GivenUp().ok()) return false;
  // The daemon's close shows as a hang-up whatever it left unread on the socket (a group's
  // failure, its shutdown notice): the poll reads nothing.
  pollfd p = {fd_, POLLRDHUP, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

void ControlConnection::GiveUp(const Status& why) {
  std::lock_guard<std::mutex> lock(given_up_mu_);
  if (!given_up_.ok()) return;
  given_up_ = Status(Code::kDaemonLost, why.message() + "; libohio gave up on this ohiod and closed its connection");
  // Not closed: the descriptor stays this connection's (the groups' waits poll it, and now
  // find it closed) until the connection is destroyed.
  shutdown(fd_, SHUT_RDWR);
}

Result<control::DaemonMessage> ControlConnection::Call(const control::ClientMessage& request,
                                                       std::vector<int>* fds, const char* what,
                                                       std::chrono::milliseconds within) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status given_up = GivenUp(); !given_up.ok()) return given_up;
  const Deadline deadline = std::chrono::steady_clock::now() + within;
  Status s = SendFrame(fd_, request.SerializeAsString(), {}, deadline);
  std::string payload;
  // A daemon that refuses a connection (too many clients) says why and closes it at once: the
  // send may fail, but the reason is still there to read.
  const Status sent = s;
  if (sent.code() != Code::kTimeout) s = ReceiveFrame(fd_, kMaxReplyBytes, &payload, fds, deadline);
  if (s.code() == Code::kTimeout) {
    std::string message = std::string("ohiod did not answer ") + what + " within " + std::to_string(within.count()) + " ms";
    message += DaemonStateNote(daemon_pid_);
    const Status late(Code::kTimeout, message);
    GiveUp(late);
    return late;
  }
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
  auto reply = Call(m, &fds, "join", setup_timeout_);
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

Status ControlConnection::Leave(const std::string& key, std::chrono::milliseconds within) {
  control::ClientMessage m;
  m.mutable_leave()->set_key(key);
  std::vector<int> fds;
  auto reply = Call(m, &fds, "leave", within);
  return reply.status();
}

}  // namespace ohio
