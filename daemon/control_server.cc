#include "daemon/control_server.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "common/unix_socket.h"
#include "common/version.h"
#include "daemon/control_request.h"

namespace ohio {
namespace {

Status MakeParentDir(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return Status::Ok();
  std::string dir = path.substr(0, slash);
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return SystemError("creating " + dir, errno);
  return Status::Ok();
}

// True if some process accepts connections on the socket at `path`.
bool SomeoneListens(const std::string& path) {
  auto fd = ConnectUnix(path);
  if (!fd.ok()) return false;
  close(fd.value());
  return true;
}

constexpr uint64_t kStopTag = ~uint64_t{0};
constexpr uint64_t kListenTag = ~uint64_t{0} - 1;

}  // namespace

ControlServer::~ControlServer() { Stop(); }

Status ControlServer::Start() {
  const std::string& path = config_.socket;
  auto addr = UnixAddress(path);
  if (!addr.ok()) return addr.status();
  Status s = MakeParentDir(path);
  if (!s.ok()) return s;
  // Only a socket is ever replaced: a file or directory at the path is a mistake in --socket,
  // and what it holds is someone's.
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
    return Status(Code::kInvalidArgument, path + " exists and is not a socket; ohiod replaces only a stale socket "
                                                 "there: choose another --socket, or move that file away");
  }
  if (SomeoneListens(path)) {
    return Status(Code::kInvalidArgument, "another ohiod is already listening on " + path);
  }
  unlink(path.c_str());  // a stale socket of a daemon that died
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) return SystemError("socket", errno);
  if (bind(listen_fd_, reinterpret_cast<const struct sockaddr*>(&addr.value()), sizeof(struct sockaddr_un)) != 0) {
    return SystemError("binding " + path, errno);
  }
  // Ranks of every user connect here; what they may do is decided per client by its uid.
  if (chmod(path.c_str(), 0666) != 0) return SystemError("chmod " + path, errno);
  if (listen(listen_fd_, 512) != 0) return SystemError("listen", errno);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd_ < 0 || stop_fd_ < 0) return SystemError("epoll/eventfd", errno);
  struct epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenTag;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.u64 = kStopTag;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, stop_fd_, &ev);
  thread_ = std::thread([this] { Run(); });
  spdlog::info("control socket {} ready", path);
  return Status::Ok();
}

void ControlServer::Stop() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof(one));
    thread_.join();
  }
  while (!clients_.empty()) Disconnect(clients_.begin()->first);
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    unlink(config_.socket.c_str());
    listen_fd_ = -1;
  }
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
  epoll_fd_ = stop_fd_ = -1;
}

void ControlServer::Run() {
  struct epoll_event events[64];
  for (;;) {
    int n = epoll_wait(epoll_fd_, events, 64, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      spdlog::error("control server: epoll_wait: {}", std::strerror(errno));
      return;
    }
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kStopTag) return;
      if (tag == kListenTag) {
        Accept();
        continue;
      }
      const int fd = static_cast<int>(tag);
      auto it = clients_.find(fd);
      if (it == clients_.end()) continue;
      if (!OnReadable(*it->second)) Disconnect(fd);
    }
  }
}

void ControlServer::Accept() {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EINTR) spdlog::warn("accept: {}", std::strerror(errno));
      return;
    }
    auto c = std::make_unique<Client>(config_.max_message_bytes);
    c->fd = fd;
    struct ucred cred = {};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      close(fd);
      continue;
    }
    c->cred = {cred.pid, cred.uid, cred.gid, PeerPidfd(fd, cred.pid)};
    if (clients_.size() >= config_.max_clients) {
      spdlog::warn("refusing client pid {}: max_clients = {} reached", cred.pid, config_.max_clients);
      ReplyError(*c, control::Error::STATE, "ohiod serves at most " + std::to_string(config_.max_clients) + " clients");
      close(fd);
      continue;
    }
    const size_t of_uid = std::count_if(clients_.begin(), clients_.end(),
                                        [&](const auto& entry) { return entry.second->cred.uid == cred.uid; });
    if (of_uid >= config_.user_max_clients) {
      spdlog::warn("refusing client pid {}: uid {} has {} connections, user_max_clients = {}", cred.pid, cred.uid,
                   of_uid, config_.user_max_clients);
      ReplyError(*c, control::Error::STATE,
                 "uid " + std::to_string(cred.uid) + " already has " + std::to_string(of_uid) +
                     " connections to ohiod; user-max-clients = " + std::to_string(config_.user_max_clients));
      close(fd);
      continue;
    }
    struct epoll_event ev = {};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = static_cast<uint64_t>(fd);
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    clients_[fd] = std::move(c);
    client_count_ = clients_.size();
  }
}

bool ControlServer::OnReadable(Client& c) {
  char buf[65536];
  for (;;) {
    ssize_t r = read(c.fd, buf, sizeof(buf));
    if (r > 0) {
      c.reader.Append(buf, static_cast<size_t>(r));
      std::string payload;
      for (;;) {
        auto next = c.reader.Take(&payload);
        if (next == FrameReader::Next::kNeedMore) break;
        if (next == FrameReader::Next::kTooLarge) {
          spdlog::warn("client pid {}: frame of {} bytes exceeds max_message_bytes; disconnecting", c.cred.pid,
                       c.reader.announced());
          ReplyError(c, control::Error::BAD_MESSAGE,
                     "message of " + std::to_string(c.reader.announced()) + " bytes exceeds the limit of " +
                         std::to_string(config_.max_message_bytes));
          return false;
        }
        if (!Handle(c, payload)) return false;
      }
      continue;
    }
    if (r == 0) {
      if (!c.reader.empty()) spdlog::warn("client pid {}: connection closed mid-message", c.cred.pid);
      return false;
    }
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

bool ControlServer::Reply(Client& c, const control::DaemonMessage& m, const std::vector<int>& fds) {
  Status s = SendFrame(c.fd, m.SerializeAsString(), fds);
  if (!s.ok()) spdlog::warn("client pid {}: {}", c.cred.pid, s.message());
  return s.ok();
}

bool ControlServer::ReplyError(Client& c, control::Error::Code code, const std::string& message) {
  control::DaemonMessage m;
  m.mutable_error()->set_code(code);
  m.mutable_error()->set_message(message);
  return Reply(c, m);
}

bool ControlServer::Handle(Client& c, const std::string& payload) {
  auto parsed = ParseControlRequest(payload);
  if (!parsed.ok()) {
    spdlog::warn("client pid {}: unparseable control message; disconnecting", c.cred.pid);
    ReplyError(c, control::Error::BAD_MESSAGE, parsed.status().message());
    return false;
  }
  const control::ClientMessage& msg = parsed.value();
  if (msg.has_hello()) {
    if (Status s = CheckHello(msg.hello()); !s.ok()) {
      ReplyError(c, control::Error::VERSION, s.message());
      return false;
    }
    c.greeted = true;
    control::DaemonMessage reply;
    reply.mutable_hello()->set_protocol_version(kControlProtocolVersion);
    reply.mutable_hello()->set_daemon_version(kVersion);
    reply.mutable_hello()->set_node_name(config_.node_name);
    return Reply(c, reply);
  }
  if (!c.greeted) {
    ReplyError(c, control::Error::STATE, "the first message must be Hello");
    return false;
  }
  if (msg.has_join()) {
    control::Error::Code refusal = control::Error::UNKNOWN;
    auto joined = registry_->Join(msg.join(), c.cred, &refusal);
    if (!joined.ok()) {
      spdlog::info("client pid {} (uid {}): join refused: {}", c.cred.pid, c.cred.uid, joined.status().message());
      return ReplyError(c, refusal, joined.status().message());
    }
    const Membership& m = joined.value();
    control::DaemonMessage reply;
    auto* j = reply.mutable_join();
    j->set_segment_bytes(m.group->segment_bytes());
    j->set_local_rank(m.local);
    j->set_local_ranks(m.group->local_ranks());
    j->set_timeout_ms(m.group->timeout_ms());
    j->set_algorithm(AlgorithmName(m.group->spec().algorithm));
    j->set_node_cpus(node_cpus_);
    c.memberships.push_back(m);
    if (!Reply(c, reply, {m.group->segment_fd(), m.group->doorbell_fd()})) return false;
    return true;
  }
  if (msg.has_leave()) {
    for (auto it = c.memberships.begin(); it != c.memberships.end(); ++it) {
      const GroupKey& key = it->group->spec().key;
      if (msg.leave().key().size() == key.size() && std::memcmp(key.data(), msg.leave().key().data(), key.size()) == 0) {
        registry_->Depart(*it, /*clean=*/true, c.cred);
        c.memberships.erase(it);
        control::DaemonMessage reply;
        reply.mutable_leave();
        return Reply(c, reply);
      }
    }
    return ReplyError(c, control::Error::STATE, "this connection is not a member of that group");
  }
  ReplyError(c, control::Error::BAD_MESSAGE, "unexpected message");
  return false;
}

ControlServer::Client::~Client() {
  if (cred.pidfd >= 0) close(cred.pidfd);
}

void ControlServer::Disconnect(int fd) {
  auto it = clients_.find(fd);
  if (it == clients_.end()) return;
  Client& c = *it->second;
  for (const Membership& m : c.memberships) registry_->Depart(m, /*clean=*/false, c.cred);
  if (epoll_fd_ >= 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  clients_.erase(it);
  client_count_ = clients_.size();
}

}  // namespace ohio
