#include "daemon/transport/tcp/tcp_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include <spdlog/spdlog.h>


namespace ohio {
namespace {

constexpr uint32_t kHello = TcpFrameHeader::kHello;
constexpr uint32_t kPut = TcpFrameHeader::kPut;
constexpr uint32_t kMessage = TcpFrameHeader::kMessage;
constexpr uint64_t kWakeTag = ~uint64_t{0};
constexpr uint64_t kListenTag = ~uint64_t{0} - 1;
constexpr uint64_t kTimerTag = ~uint64_t{0} - 2;
// How long the listener rests when no descriptor is free for a new connection.
constexpr auto kListenerRest = std::chrono::milliseconds(100);
constexpr int kMaxIov = 64;
constexpr int kMaxEvents = 64;
// What one Poll reads from one connection at most: a large put streaming in must not keep
// the engine from its other groups and connections; the rest is read on the next pass.
constexpr uint64_t kReadBudget = 4 << 20;

void EncodeHeader(char* h, uint32_t type, uint32_t imm, uint64_t key, uint64_t offset, uint64_t bytes) {
  TcpFrameHeader{type, imm, key, offset, bytes}.Encode(h);
}

// Writes what the socket takes of a frame: the header from header_sent on, then the payload
// pieces from byte `sent` on. What it wrote, or -1 with errno.
ssize_t WriteFrame(int fd, const char* header, size_t header_bytes, size_t header_sent, const LocalPiece* pieces,
                   size_t count, uint64_t sent) {
  struct iovec iov[kMaxIov];
  int n = 0;
  if (header_sent < header_bytes) iov[n++] = {const_cast<char*>(header + header_sent), header_bytes - header_sent};
  uint64_t skip = sent;
  for (size_t i = 0; i < count && n < kMaxIov; ++i) {
    if (skip >= pieces[i].bytes) {
      skip -= pieces[i].bytes;
      continue;
    }
    iov[n++] = {const_cast<uint8_t*>(static_cast<const uint8_t*>(pieces[i].base) + skip), pieces[i].bytes - skip};
    skip = 0;
  }
  if (n == 0) return 0;
  struct msghdr msg = {};
  msg.msg_iov = iov;
  msg.msg_iovlen = static_cast<size_t>(n);
  // A peer that went away must show as an error here, not kill the daemon with SIGPIPE.
  return sendmsg(fd, &msg, MSG_NOSIGNAL);
}

void Tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// "host:port" -> (host, port); the host may be a name.
bool SplitAddress(const std::string& address, std::string* host, std::string* port) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) return false;
  *host = address.substr(0, colon);
  *port = address.substr(colon + 1);
  return true;
}

}  // namespace

Result<std::unique_ptr<TcpTransport>> TcpTransport::Start(const std::string& self, const std::string& bind_host,
                                                          uint16_t port, const std::string& advertised_host,
                                                          Auth auth, Limits limits) {
  std::unique_ptr<TcpTransport> t(new TcpTransport());
  t->self_ = self;
  t->auth_ = std::move(auth);
  t->limits_ = limits;
  t->listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (t->listen_fd_ < 0) return SystemError("socket", errno);
  int one = 1;
  setsockopt(t->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  struct sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, bind_host.c_str(), &addr.sin_addr) != 1) {
    return Status(Code::kInvalidArgument, "data listen address '" + bind_host + "' is not an IPv4 address");
  }
  if (bind(t->listen_fd_, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0) {
    return SystemError("binding the data port " + bind_host + ":" + std::to_string(port), errno);
  }
  if (listen(t->listen_fd_, 128) != 0) return SystemError("listen", errno);
  socklen_t len = sizeof(addr);
  getsockname(t->listen_fd_, reinterpret_cast<struct sockaddr*>(&addr), &len);
  t->address_ = advertised_host + ":" + std::to_string(ntohs(addr.sin_port));
  t->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  t->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  t->timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (t->epoll_fd_ < 0 || t->wake_fd_ < 0 || t->timer_fd_ < 0) return SystemError("epoll/eventfd/timerfd", errno);
  struct epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeTag;
  if (epoll_ctl(t->epoll_fd_, EPOLL_CTL_ADD, t->wake_fd_, &ev) != 0) return SystemError("epoll_ctl", errno);
  ev.data.u64 = kListenTag;
  if (epoll_ctl(t->epoll_fd_, EPOLL_CTL_ADD, t->listen_fd_, &ev) != 0) return SystemError("epoll_ctl", errno);
  ev.data.u64 = kTimerTag;
  if (epoll_ctl(t->epoll_fd_, EPOLL_CTL_ADD, t->timer_fd_, &ev) != 0) return SystemError("epoll_ctl", errno);
  t->discard_.resize(64 * 1024);
  return t;
}

TcpTransport::~TcpTransport() {
  for (auto& [fd, c] : conns_) close(fd);
  for (int fd : {listen_fd_, epoll_fd_, wake_fd_, timer_fd_}) {
    if (fd >= 0) close(fd);
  }
}

Result<uint64_t> TcpTransport::RegisterRegion(void* base, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(regions_mu_);
  const uint64_t key = next_key_++;
  regions_[key] = {static_cast<uint8_t*>(base), bytes};
  ++registrations_;
  registered_bytes_ += bytes;
  return key;
}

void TcpTransport::DeregisterRegion(uint64_t key) {
  std::lock_guard<std::mutex> lock(regions_mu_);
  for (auto* regions : {&regions_, &parked_}) {
    auto it = regions->find(key);
    if (it == regions->end()) continue;
    ++deregistrations_;
    registered_bytes_ -= it->second.bytes;
    regions->erase(it);
    return;
  }
}

bool TcpTransport::ParkRegion(uint64_t key) {
  std::lock_guard<std::mutex> lock(regions_mu_);
  auto it = regions_.find(key);
  if (it == regions_.end()) return false;
  parked_[key] = it->second;
  regions_.erase(it);
  return true;
}

std::optional<uint64_t> TcpTransport::ReuseRegion(uint64_t key) {
  std::lock_guard<std::mutex> lock(regions_mu_);
  auto it = parked_.find(key);
  if (it == parked_.end()) return std::nullopt;
  const uint64_t fresh = next_key_++;
  regions_[fresh] = it->second;
  parked_.erase(it);
  return fresh;
}

std::vector<std::string> TcpTransport::connected_peers() const {
  std::lock_guard<std::mutex> lock(peers_mu_);
  return peers_;
}

TransportStats TcpTransport::stats() const {
  TransportStats s;
  {
    std::lock_guard<std::mutex> lock(regions_mu_);
    s.registrations = registrations_;
    s.deregistrations = deregistrations_;
    s.registered_bytes = registered_bytes_;
  }
  s.data_frames_sent = data_frames_sent_.load(std::memory_order_relaxed);
  s.data_frames_received = data_frames_received_.load(std::memory_order_relaxed);
  s.control_frames_sent = control_frames_sent_.load(std::memory_order_relaxed);
  s.control_frames_received = control_frames_received_.load(std::memory_order_relaxed);
  return s;
}

TcpTransport::PeerSlot& TcpTransport::Slot(PeerId peer) {
  if (peer >= slots_.size()) slots_.resize(size_t{peer} + 1);
  return slots_[peer];
}

// --- connecting (any thread asks, Poll dials) ---

Status TcpTransport::Connect(PeerId peer, const std::string& address) {
  Command c;
  c.peer = peer;
  c.address = address;
  // The node whose name sorts first dials; the other waits for the hello. The name is
  // resolved here, on the caller's thread, so that a slow DNS never stalls the engine.
  if (self_ < directory_.Name(peer)) {
    std::string host, port;
    struct addrinfo hints = {};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    struct addrinfo* res = nullptr;
    if (!SplitAddress(address, &host, &port)) {
      c.failure = "not a host:port address";
    } else if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || res == nullptr) {
      c.failure = "cannot resolve";
    } else {
      std::memcpy(&c.resolved, res->ai_addr, sizeof(c.resolved));
      freeaddrinfo(res);
    }
    // Minted here too: a round trip to munged must not stall the engine.
    if (c.failure.empty() && auth_.credential_for) {
      auto cred = auth_.credential_for(directory_.Name(peer));
      if (cred.ok()) {
        c.credential = cred.value();
      } else {
        c.failure = cred.status().message();
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(commands_mu_);
    commands_.push_back(std::move(c));
  }
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  return Status::Ok();
}

void TcpTransport::ApplyCommands() {
  uint64_t v;
  (void)!read(wake_fd_, &v, sizeof(v));
  std::deque<Command> commands;
  {
    std::lock_guard<std::mutex> lock(commands_mu_);
    commands.swap(commands_);
  }
  for (const Command& c : commands) {
    if (Slot(c.peer).conn != nullptr) continue;  // up, or being dialled
    if (self_ < directory_.Name(c.peer)) Dial(c);
  }
}

void TcpTransport::Dial(const Command& c) {
  const std::string peer = directory_.Name(c.peer);
  auto fail = [&](const std::string& why) {
    spdlog::warn("data connection to {} ({}): {}", peer, c.address, why);
    Slot(c.peer).pending.clear();
    TransportEvent e;
    e.kind = TransportEvent::Kind::kPeerDown;
    e.peer = c.peer;
    e.reason = "cannot connect to " + c.address + ": " + why;
    e.never_up = true;
    Emit(std::move(e));
  };
  if (!c.failure.empty()) return fail(c.failure);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return fail(std::strerror(errno));
  if (connect(fd, reinterpret_cast<const struct sockaddr*>(&c.resolved), sizeof(c.resolved)) != 0 &&
      errno != EINPROGRESS) {
    const int err = errno;
    close(fd);
    return fail(std::strerror(err));
  }
  Tune(fd);
  auto conn = std::make_unique<Conn>();
  conn->fd = fd;
  conn->named = true;
  conn->peer = c.peer;
  conn->connecting = true;
  conn->from = c.address;
  conn->watching_writes = true;
  Outgoing hello;
  hello.type = kHello;
  hello.owned.assign(self_.begin(), self_.end());
  if (!c.credential.empty()) {
    hello.owned.push_back('\0');
    hello.owned.insert(hello.owned.end(), c.credential.begin(), c.credential.end());
  }
  hello.bytes = hello.owned.size();
  EncodeHeader(hello.header, kHello, 0, 0, 0, hello.bytes);
  conn->out.push_back(std::move(hello));
  struct epoll_event ev = {};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP;
  ev.data.u64 = static_cast<uint64_t>(fd);
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  Slot(c.peer).conn = conn.get();
  conns_[fd] = std::move(conn);
}

void TcpTransport::Accept() {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) OutOfDescriptors(errno);
      return;
    }
    struct sockaddr_in from = {};
    socklen_t len = sizeof(from);
    char host[INET_ADDRSTRLEN] = "?";
    if (getpeername(fd, reinterpret_cast<struct sockaddr*>(&from), &len) == 0) {
      inet_ntop(AF_INET, &from.sin_addr, host, sizeof(host));
    }
    const std::string where = std::string(host) + ":" + std::to_string(ntohs(from.sin_port));
    const uint32_t source = from.sin_addr.s_addr;
    const size_t of_source = unauthenticated_by_source_[source];
    const size_t per_source = std::max<size_t>(1, limits_.max_unauthenticated / 2);
    std::string refusal;
    if (unauthenticated_ >= limits_.max_unauthenticated) {
      refusal = std::to_string(unauthenticated_) +
                " connections have not said hello yet; max-unauthenticated-data-connections = " +
                std::to_string(limits_.max_unauthenticated);
    } else if (of_source >= per_source) {
      refusal = std::string(host) + " has " + std::to_string(of_source) +
                " connections that have not said hello yet, half of max-unauthenticated-data-connections = " +
                std::to_string(limits_.max_unauthenticated);
    }
    if (!refusal.empty()) {
      if (of_source == 0) unauthenticated_by_source_.erase(source);
      uint64_t suppressed = 0;
      if (refused_log_.Allow(&suppressed)) {
        spdlog::warn("data port: refused a connection from {}: {}{}", where, refusal, SuppressedNote(suppressed));
      }
      close(fd);  // after the line: whoever sees the connection closed finds the reason logged
      ArmTimer();  // to tell of suppressed lines
      continue;
    }
    Tune(fd);
    auto conn = std::make_unique<Conn>();
    conn->fd = fd;
    conn->from = where;
    conn->source = source;
    conn->awaiting_hello = true;
    conn->serial = next_serial_++;
    ++unauthenticated_;
    ++unauthenticated_by_source_[source];
    hello_deadlines_.push_back({Clock::now() + limits_.hello_timeout, fd, conn->serial});
    struct epoll_event ev = {};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = static_cast<uint64_t>(fd);
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    conns_[fd] = std::move(conn);
    if (hello_deadlines_.size() == 1) ArmTimer();
  }
}

void TcpTransport::HelloSeen(Conn* c) {
  if (!c->awaiting_hello) return;
  c->awaiting_hello = false;
  --unauthenticated_;
  auto it = unauthenticated_by_source_.find(c->source);
  if (it != unauthenticated_by_source_.end() && --it->second == 0) unauthenticated_by_source_.erase(it);
}

void TcpTransport::OutOfDescriptors(int err) {
  const int shed = reserve_.ShedPending(listen_fd_);
  uint64_t suppressed = 0;
  if (accept_log_.Allow(&suppressed)) {
    spdlog::warn("data port: accept: {}; closed {} pending connection(s), not accepting for {} ms{}",
                 std::strerror(err), shed, kListenerRest.count(), SuppressedNote(suppressed));
  }
  listener_.Rest(epoll_fd_, listen_fd_, Clock::now() + kListenerRest);
  ArmTimer();
}

void TcpTransport::ArmTimer() {
  std::optional<Clock::time_point> due;
  auto consider = [&](Clock::time_point t) {
    if (!due || t < *due) due = t;
  };
  if (!hello_deadlines_.empty()) consider(hello_deadlines_.front().at);
  if (listener_.resting()) consider(listener_.until());
  for (const LogRateLimiter* log : {&accept_log_, &refused_log_, &hello_log_}) {
    if (log->has_suppressed()) consider(log->summary_due());
  }
  struct itimerspec spec = {};
  if (due) {
    // steady_clock is CLOCK_MONOTONIC; a time already past still fires (1 ns is not "disarm").
    const auto ns = std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             due->time_since_epoch()).count());
    spec.it_value.tv_sec = ns / 1000000000;
    spec.it_value.tv_nsec = ns % 1000000000;
  }
  timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr);
}

void TcpTransport::OnTimer() {
  uint64_t expirations;
  (void)!read(timer_fd_, &expirations, sizeof(expirations));
  const auto now = Clock::now();
  while (!hello_deadlines_.empty() && hello_deadlines_.front().at <= now) {
    const HelloDeadline d = hello_deadlines_.front();
    hello_deadlines_.pop_front();
    auto it = conns_.find(d.fd);
    if (it == conns_.end() || it->second->serial != d.serial || !it->second->awaiting_hello) continue;
    uint64_t suppressed = 0;
    if (hello_log_.Allow(&suppressed, now)) {
      spdlog::warn("data port: closed the connection from {}: no hello within hello-timeout-ms = {}{}",
                   it->second->from, limits_.hello_timeout.count(), SuppressedNote(suppressed));
    }
    Close(it->second.get(), "no hello within the hello timeout");
  }
  listener_.WakeIfDue(epoll_fd_, listen_fd_, kListenTag, now);
  if (uint64_t n = accept_log_.TakeSuppressed(now)) {
    spdlog::warn("data port: {} similar messages suppressed (out of descriptors)", n);
  }
  if (uint64_t n = refused_log_.TakeSuppressed(now)) {
    spdlog::warn("data port: {} similar messages suppressed (connections refused)", n);
  }
  if (uint64_t n = hello_log_.TakeSuppressed(now)) {
    spdlog::warn("data port: {} similar messages suppressed (no hello in time)", n);
  }
  ArmTimer();
}

void TcpTransport::Established(Conn* c, PeerId peer) {
  PeerSlot& slot = Slot(peer);
  if (slot.conn != nullptr && slot.conn != c) {
    // The peer restarted and dialled again: the old connection is dead even if we missed it.
    Close(slot.conn, "replaced by a new connection from the peer");
  }
  HelloSeen(c);
  c->named = true;
  c->peer = peer;
  c->connecting = false;
  slot.conn = c;
  for (auto& o : slot.pending) c->out.push_back(std::move(o));
  slot.pending.clear();
  PeersChanged();
  spdlog::info("data connection with {} established", directory_.Name(peer));
  WatchWrites(c);  // what was queued goes out on the next pass
}

void TcpTransport::PeersChanged() {
  std::vector<std::string> names;
  for (PeerId p = 0; p < slots_.size(); ++p) {
    if (slots_[p].conn != nullptr && !slots_[p].conn->connecting) names.push_back(directory_.Name(p));
  }
  std::sort(names.begin(), names.end());
  established_.store(names.size(), std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(peers_mu_);
  peers_ = std::move(names);
}

void TcpTransport::Close(Conn* c, const std::string& reason) {
  const bool named = c->named;
  const PeerId peer = c->peer;
  const int fd = c->fd;
  const bool never_up = c->connecting;  // a dial refused or unanswered
  const std::string why = never_up ? "cannot connect to " + c->from + ": " + reason : reason;
  const bool current = named && Slot(peer).conn == c;
  if (current) Slot(peer).conn = nullptr;
  HelloSeen(c);
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  conns_.erase(fd);  // c is gone from here on
  if (current) PeersChanged();
  if (named) {
    spdlog::warn("data connection with {} closed: {}", directory_.Name(peer), why);
    Slot(peer).pending.clear();
    TransportEvent e;
    e.kind = TransportEvent::Kind::kPeerDown;
    e.peer = peer;
    e.reason = why;
    e.never_up = never_up;
    Emit(std::move(e));
  }
}

// --- writing ---

Status TcpTransport::Put(PeerId peer, const LocalPiece* pieces, size_t count, uint64_t remote_key,
                         uint64_t remote_offset, uint32_t imm, uint64_t cookie) {
  uint64_t bytes = 0;
  for (size_t i = 0; i < count; ++i) bytes += pieces[i].bytes;
  char header[kHeaderBytes];
  EncodeHeader(header, kPut, imm, remote_key, remote_offset, bytes);
  return Post(peer, kPut, header, pieces, count, bytes, cookie);
}

Status TcpTransport::Send(PeerId peer, const void* message, size_t bytes) {
  if (bytes > kMaxTransportMessage) return Status(Code::kInvalidArgument, "transport message too large");
  char header[kHeaderBytes];
  EncodeHeader(header, kMessage, 0, 0, 0, bytes);
  const LocalPiece piece{message, bytes};
  return Post(peer, kMessage, header, &piece, 1, bytes, 0);
}

Status TcpTransport::Post(PeerId peer, uint32_t type, const char* header, const LocalPiece* pieces, size_t count,
                          uint64_t bytes, uint64_t cookie) {
  PeerSlot& slot = Slot(peer);
  Conn* c = slot.conn;
  uint64_t written = 0;
  if (c != nullptr && !c->connecting && c->out.empty()) {
    const ssize_t w = WriteFrame(c->fd, header, kHeaderBytes, 0, pieces, count, 0);
    if (w < 0 && errno != EAGAIN && errno != EINTR) {
      Close(c, std::string("write failed: ") + std::strerror(errno));
      return Status::Ok();  // the caller learns of it through kPeerDown, like of any lost put
    }
    written = w > 0 ? static_cast<uint64_t>(w) : 0;
  }
  Outgoing o;
  o.type = type;
  std::memcpy(o.header, header, kHeaderBytes);
  o.bytes = bytes;
  o.cookie = cookie;
  o.header_sent = std::min<uint64_t>(written, kHeaderBytes);
  o.sent = written - o.header_sent;
  if (o.header_sent == kHeaderBytes && o.sent == bytes) {
    Sent(c, o);
    return Status::Ok();
  }
  // The slow path: the socket is full or not up yet. A message is copied (the caller's buffer
  // is gone once Send returns); a put's memory stays the caller's until kPutDone.
  if (type == kMessage) {
    o.owned.resize(bytes);
    if (bytes > 0) std::memcpy(o.owned.data(), pieces[0].base, bytes);
  } else {
    o.pieces.assign(pieces, pieces + count);
  }
  if (c == nullptr) {
    slot.pending.push_back(std::move(o));
    return Status::Ok();
  }
  c->out.push_back(std::move(o));
  WatchWrites(c);
  return Status::Ok();
}

void TcpTransport::Sent(Conn* c, const Outgoing& o) {
  if (o.type == kPut) {
    data_frames_sent_.fetch_add(1, std::memory_order_relaxed);
    TransportEvent e;
    e.kind = TransportEvent::Kind::kPutDone;
    e.peer = c->peer;
    e.cookie = o.cookie;
    e.bytes = o.bytes;
    Emit(std::move(e));
  } else if (o.type == kMessage) {
    control_frames_sent_.fetch_add(1, std::memory_order_relaxed);
  }
}

void TcpTransport::WatchWrites(Conn* c) {
  const bool want = !c->out.empty() || c->connecting;
  if (want == c->watching_writes) return;
  c->watching_writes = want;
  struct epoll_event ev = {};
  ev.events = EPOLLIN | EPOLLRDHUP | (want ? static_cast<uint32_t>(EPOLLOUT) : 0u);
  ev.data.u64 = static_cast<uint64_t>(c->fd);
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
}

void TcpTransport::OnWritable(Conn* c) {
  if (c->connecting) {
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err == EINPROGRESS || err == EALREADY) return;
    if (err != 0) return Close(c, std::string("connect failed: ") + std::strerror(err));
    Established(c, c->peer);
  }
  while (!c->out.empty()) {
    Outgoing& o = c->out.front();
    const LocalPiece owned{o.owned.data(), o.owned.size()};
    const bool has_owned = !o.owned.empty();
    const ssize_t w = WriteFrame(c->fd, o.header, kHeaderBytes, o.header_sent, has_owned ? &owned : o.pieces.data(),
                                 has_owned ? 1 : o.pieces.size(), o.sent);
    if (w < 0) {
      if (errno == EAGAIN || errno == EINTR) break;
      return Close(c, std::string("write failed: ") + std::strerror(errno));
    }
    size_t left = static_cast<size_t>(w);
    const size_t h = std::min(left, kHeaderBytes - o.header_sent);
    o.header_sent += h;
    left -= h;
    o.sent += left;
    if (o.header_sent < kHeaderBytes || o.sent < o.bytes) continue;  // more pieces than one writev takes
    Sent(c, o);
    c->out.pop_front();
  }
  WatchWrites(c);
}

// --- reading ---

std::string TcpTransport::OnFrameDone(Conn* c) {
  const Frame& f = c->frame;
  TransportEvent e;
  e.peer = c->peer;
  switch (f.type) {
    case kHello: {
      if (c->named) return "protocol error (unexpected hello)";
      const std::string hello(reinterpret_cast<const char*>(c->small), f.bytes);
      const auto nul = hello.find('\0');
      const std::string name = hello.substr(0, nul);
      if (name.empty()) return "protocol error (a hello naming nobody)";
      if (auth_.check) {
        Status s = auth_.check(name, nul == std::string::npos ? "" : hello.substr(nul + 1), c->from);
        if (!s.ok()) return "refused: " + s.message();
      }
      Established(c, directory_.For(name));
      return "";
    }
    case kPut:
      // A put whose region was gone (or out of bounds) was drained, not delivered.
      if (c->dropped) return "";
      data_frames_received_.fetch_add(1, std::memory_order_relaxed);
      e.kind = TransportEvent::Kind::kArrived;
      e.imm = f.imm;
      e.bytes = f.bytes;
      Emit(std::move(e));
      return "";
    case kMessage:
      control_frames_received_.fetch_add(1, std::memory_order_relaxed);
      e.kind = TransportEvent::Kind::kMessage;
      e.message_bytes = static_cast<uint32_t>(f.bytes);
      std::memcpy(e.message.data(), c->small, f.bytes);
      Emit(std::move(e));
      return "";
  }
  return "protocol error (unknown frame type)";
}

int64_t TcpTransport::Take(Conn* c, uint8_t* dst, uint64_t n, uint64_t* budget) {
  if (c->ahead_begin == c->ahead_end) {
    if (c->drained || *budget == 0) return 0;
    c->ahead_begin = c->ahead_end = 0;
    const bool direct = n >= kReadAheadBytes;
    const uint64_t want = std::min<uint64_t>(direct ? n : kReadAheadBytes, *budget);
    // Let this read's acknowledgement wait for data going back. A small frame on a connection
    // that carries nothing back in the same moment (a Bruck step sends one way) is otherwise
    // acknowledged by a packet of its own as soon as the read empties the socket: at 32 x 1 that
    // was 2 of every 9 packets a node sent and a tenth of the daemons' CPU. Delayed, the
    // acknowledgement rides on the next frame back, or on every second small frame (TCP's own
    // rule), or on the delayed-ack timer (40 ms, well under the 200 ms retransmit timeout); bulk
    // data is acknowledged every two full segments either way. The kernel leaves this mode on
    // its own (a delayed-ack timer that fired), so it is asked again before every read.
    const int no_quick_ack = 0;
    setsockopt(c->fd, IPPROTO_TCP, TCP_QUICKACK, &no_quick_ack, sizeof(no_quick_ack));
    const ssize_t r = read(c->fd, direct ? dst : c->ahead, want);
    if (r < 0) {
      if (errno != EAGAIN && errno != EINTR) return -1;
      c->drained = errno == EAGAIN;
      return 0;
    }
    if (r == 0) {
      errno = 0;
      return -1;
    }
    if (static_cast<uint64_t>(r) < want) c->drained = true;
    *budget -= std::min<uint64_t>(*budget, static_cast<uint64_t>(r));
    if (direct) return r;
    c->ahead_end = static_cast<uint32_t>(r);
  }
  const uint64_t k = std::min<uint64_t>(n, c->ahead_end - c->ahead_begin);
  std::memcpy(dst, c->ahead + c->ahead_begin, k);
  c->ahead_begin += static_cast<uint32_t>(k);
  return static_cast<int64_t>(k);
}

bool TcpTransport::ReadPayload(Conn* c, uint64_t* budget) {
  const Frame& f = c->frame;
  while (c->payload_got < f.bytes) {
    const uint64_t want = f.bytes - c->payload_got;
    int64_t r;
    if (f.type == kPut) {
      std::lock_guard<std::mutex> lock(regions_mu_);
      auto it = regions_.find(f.key);
      if (it != regions_.end() && f.FitsRegion(it->second.bytes)) {
        r = Take(c, it->second.base + f.offset + c->payload_got, want, budget);
      } else {
        c->dropped = true;
        // A region already closed (its group ended) or out of bounds: drain and drop.
        r = Take(c, discard_.data(), std::min<uint64_t>(want, discard_.size()), budget);
      }
    } else {
      r = Take(c, c->small + c->payload_got, want, budget);
    }
    if (r < 0) return false;
    if (r == 0) break;
    c->payload_got += static_cast<uint64_t>(r);
  }
  return true;
}

void TcpTransport::OnReadable(Conn* c) {
  uint64_t budget = kReadBudget;
  c->drained = false;  // epoll says there is something to read
  for (;;) {
    if (!c->in_payload) {
      const int64_t r = Take(c, reinterpret_cast<uint8_t*>(c->header) + c->header_got, kHeaderBytes - c->header_got,
                             &budget);
      if (r == 0) return;
      if (r < 0) return Close(c, errno == 0 ? "closed by the peer" : std::string("read failed: ") + std::strerror(errno));
      c->header_got += static_cast<size_t>(r);
      if (c->header_got < kHeaderBytes) continue;
      if (!c->named && TcpFrameHeader::RawType(c->header) != kHello && auth_.check) {
        // Data before any credential: refused (and counted) like a hello without one.
        Status s = auth_.check("", "", c->from);
        return Close(c, "refused: " + s.message());
      }
      auto f = TcpFrameHeader::Decode(c->header, c->named);
      if (!f.ok()) return Close(c, "protocol error (" + f.status().message() + ")");
      c->frame = f.value();
      c->header_got = 0;
      c->payload_got = 0;
      c->dropped = false;
      c->in_payload = true;
    }
    if (!ReadPayload(c, &budget)) {
      return Close(c, errno == 0 ? "closed by the peer mid-frame" : std::string("read failed: ") + std::strerror(errno));
    }
    if (c->payload_got < c->frame.bytes) return;  // the rest has not come yet (or the budget is spent)
    c->in_payload = false;
    const std::string why = OnFrameDone(c);
    if (!why.empty()) return Close(c, why);
  }
}

// --- the engine's pass ---

void TcpTransport::Poll(std::vector<TransportEvent>* out) {
  struct epoll_event events[kMaxEvents];
  const int n = epoll_wait(epoll_fd_, events, kMaxEvents, 0);
  for (int i = 0; i < n; ++i) {
    const uint64_t tag = events[i].data.u64;
    if (tag == kWakeTag) {
      ApplyCommands();
      continue;
    }
    if (tag == kListenTag) {
      Accept();
      continue;
    }
    if (tag == kTimerTag) {
      OnTimer();
      continue;
    }
    auto it = conns_.find(static_cast<int>(tag));
    if (it == conns_.end()) continue;  // closed earlier in this pass
    Conn* c = it->second.get();
    if (events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
      OnReadable(c);
      if (conns_.find(static_cast<int>(tag)) == conns_.end()) continue;
    }
    if (events[i].events & EPOLLOUT) OnWritable(c);
  }
  if (ready_.empty()) return;
  out->insert(out->end(), std::make_move_iterator(ready_.begin()), std::make_move_iterator(ready_.end()));
  ready_.clear();
}

}  // namespace ohio
