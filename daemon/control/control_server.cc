#include "daemon/control/control_server.h"

#include <fcntl.h>
#include <malloc.h>
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
#include "daemon/control/control_request.h"
#include "shm/plan/selection_table_text.h"

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
// How often deadlines are looked at while some are running: their resolution.
constexpr auto kHousekeepingInterval = std::chrono::milliseconds(100);
// How long the listener rests when no descriptor is free for a new client.
constexpr auto kListenerRest = std::chrono::milliseconds(100);
// Freed memory past this is handed back to the system (malloc_trim) at the end of the pass.
constexpr size_t kTrimBytes = 1 << 20;

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
    int timeout_ms = -1;
    if (housekeeping_wanted_) {
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next_housekeeping_ - Clock::now());
      timeout_ms = static_cast<int>(std::max<int64_t>(0, wait.count()));
    }
    int n = epoll_wait(epoll_fd_, events, 64, timeout_ms);
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
        housekeeping_wanted_ = true;  // a new client's hello deadline, or the listener's rest
        continue;
      }
      const int fd = static_cast<int>(tag);
      auto it = clients_.find(fd);
      if (it == clients_.end()) continue;
      if (!OnReadable(*it->second)) Disconnect(fd);
    }
    if (trim_due_) {
      // Freed buffers of large frames lie in the heap, where glibc keeps them: hand them back.
      malloc_trim(0);
      trim_due_ = false;
      released_since_trim_ = 0;
    }
    const auto now = Clock::now();
    if (housekeeping_wanted_ && now >= next_housekeeping_) {
      housekeeping_wanted_ = Housekeeping(now);
      next_housekeeping_ = now + kHousekeepingInterval;
    }
  }
}

bool ControlServer::Housekeeping(Clock::time_point now) {
  const auto hello_timeout = std::chrono::milliseconds(config_.hello_timeout_ms);
  std::vector<int> silent;
  bool waiting_for_hello = false;
  for (const auto& [fd, c] : clients_) {
    if (c->greeted) continue;
    if (now - c->connected_at < hello_timeout) {
      waiting_for_hello = true;
      continue;
    }
    // A hello that came while this thread did not run (a stopped daemon, continued: its
    // epoll_wait may time out before it reports the socket) was said in time: read it first.
    if (!OnReadable(*c)) {
      silent.push_back(fd);
      continue;
    }
    if (c->greeted) continue;
    silent.push_back(fd);
    uint64_t suppressed = 0;
    if (hello_log_.Allow(&suppressed, now)) {
      spdlog::warn("client pid {} (uid {}): no hello within hello-timeout-ms = {}; disconnecting{}", c->cred.pid,
                   c->cred.uid, config_.hello_timeout_ms, SuppressedNote(suppressed));
    }
    ReplyError(*c, control::Error::STATE,
               "no Hello within hello-timeout-ms = " + std::to_string(config_.hello_timeout_ms));
  }
  for (int fd : silent) Disconnect(fd);
  listener_.WakeIfDue(epoll_fd_, listen_fd_, kListenTag, now);
  if (uint64_t n = accept_log_.TakeSuppressed(now)) {
    spdlog::warn("control socket: {} similar messages suppressed (out of descriptors)", n);
  }
  if (uint64_t n = pending_log_.TakeSuppressed(now)) {
    spdlog::warn("control socket: {} similar messages suppressed (unfinished messages over their bound)", n);
  }
  if (uint64_t n = hello_log_.TakeSuppressed(now)) {
    spdlog::warn("control socket: {} similar messages suppressed (no hello in time)", n);
  }
  return waiting_for_hello || listener_.resting() || accept_log_.has_suppressed() || pending_log_.has_suppressed() ||
         hello_log_.has_suppressed();
}

void ControlServer::OutOfDescriptors(int err) {
  const int shed = reserve_.ShedPending(listen_fd_);
  uint64_t suppressed = 0;
  if (accept_log_.Allow(&suppressed)) {
    spdlog::warn("control socket: accept: {}; closed {} pending connection(s), not accepting for {} ms{}",
                 std::strerror(err), shed, kListenerRest.count(), SuppressedNote(suppressed));
  }
  listener_.Rest(epoll_fd_, listen_fd_, Clock::now() + kListenerRest);
}

void ControlServer::Accept() {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) {
        OutOfDescriptors(errno);
      } else if (errno != EAGAIN && errno != EINTR) {
        spdlog::warn("accept: {}", std::strerror(errno));
      }
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
  char buf[kControlReadBytes];
  for (;;) {
    ssize_t r = read(c.fd, buf, sizeof(buf));
    if (r > 0) {
      if (!AdmitBytes(c, static_cast<size_t>(r))) return false;
      c.reader.Append(buf, static_cast<size_t>(r));
      SetHeld(c, c.reader.capacity());
      std::string payload;
      for (;;) {
        auto next = c.reader.Take(&payload);
        SetHeld(c, c.reader.capacity());
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
      if (payload.size() >= kTrimBytes) trim_due_ = true;
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

bool ControlServer::AdmitBytes(Client& c, size_t n) {
  const size_t growth = c.reader.CapacityAfterAppend(n) - c.held;
  if (growth == 0) return true;
  const auto held_by_uid = pending_by_uid_.find(c.cred.uid);
  const size_t of_uid = held_by_uid == pending_by_uid_.end() ? 0 : held_by_uid->second;
  std::string over;
  if (of_uid + growth > config_.user_max_pending_bytes) {
    over = "uid " + std::to_string(c.cred.uid) + " would hold " + std::to_string(of_uid + growth) +
           " bytes of ohiod's memory for unfinished messages; user-max-pending-bytes = " +
           std::to_string(config_.user_max_pending_bytes);
  } else if (pending_total_ + growth > config_.max_pending_bytes) {
    over = "clients would hold " + std::to_string(pending_total_ + growth) +
           " bytes of ohiod's memory for unfinished messages; max-pending-bytes = " +
           std::to_string(config_.max_pending_bytes);
  } else {
    return true;
  }
  uint64_t suppressed = 0;
  if (pending_log_.Allow(&suppressed)) {
    spdlog::warn("client pid {} (uid {}): {}; disconnecting{}", c.cred.pid, c.cred.uid, over,
                 SuppressedNote(suppressed));
  }
  housekeeping_wanted_ = true;  // to tell of suppressed lines
  ReplyError(c, control::Error::STATE, over);
  return false;
}

void ControlServer::SetHeld(Client& c, size_t held) {
  if (held == c.held) return;
  // Counted over every client, not per client: a flood of connections that each held a little
  // frees as much, in small pieces, when they go, and glibc keeps those in the heap too.
  if (held < c.held) released_since_trim_ += c.held - held;
  if (released_since_trim_ >= kTrimBytes) trim_due_ = true;
  size_t& of_uid = pending_by_uid_[c.cred.uid];
  of_uid = of_uid - c.held + held;
  pending_total_ = pending_total_ - c.held + held;
  if (of_uid == 0) pending_by_uid_.erase(c.cred.uid);
  c.held = held;
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
    j->set_selection_table(FormatSelectionTable(m.group->selection_policy().table));
    j->set_transport(registry_->transport_name());
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
  SetHeld(c, 0);  // its reader's memory goes with it
  for (const Membership& m : c.memberships) registry_->Depart(m, /*clean=*/false, c.cred);
  if (epoll_fd_ >= 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  clients_.erase(it);
  client_count_ = clients_.size();
}

}  // namespace ohio
