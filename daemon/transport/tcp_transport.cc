#include "daemon/transport/tcp_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "common/little_endian.h"

namespace ohio {
namespace {

enum FrameType : uint32_t { kHello = 1, kPut = 2, kMessage = 3 };
constexpr uint32_t kMagic = 0x4f480000;  // high half of the type word: "OH"
constexpr uint64_t kMaxHello = 256;
constexpr uint64_t kMaxMessage = 64 * 1024;
constexpr uint64_t kWakeTag = ~uint64_t{0};
constexpr uint64_t kListenTag = ~uint64_t{0} - 1;

void Put32(char* p, uint32_t v) { PutLittleEndian(p, v); }
void Put64(char* p, uint64_t v) { PutLittleEndian(p, v); }
uint32_t Get32(const char* p) { return GetLittleEndian<uint32_t>(p); }
uint64_t Get64(const char* p) { return GetLittleEndian<uint64_t>(p); }

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

TcpTransport::Outgoing TcpTransport::MakeFrame(uint32_t type, uint32_t imm, uint64_t key, uint64_t offset,
                                               uint64_t bytes) {
  Outgoing o;
  Put32(o.header, kMagic | type);
  Put32(o.header + 4, imm);
  Put64(o.header + 8, key);
  Put64(o.header + 16, offset);
  Put64(o.header + 24, bytes);
  o.bytes = bytes;
  return o;
}

Result<std::unique_ptr<TcpTransport>> TcpTransport::Start(const std::string& self, const std::string& bind_host,
                                                          uint16_t port, const std::string& advertised_host) {
  std::unique_ptr<TcpTransport> t(new TcpTransport());
  t->self_ = self;
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
  t->events_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (t->epoll_fd_ < 0 || t->wake_fd_ < 0 || t->events_fd_ < 0) return SystemError("epoll/eventfd", errno);
  struct epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeTag;
  epoll_ctl(t->epoll_fd_, EPOLL_CTL_ADD, t->wake_fd_, &ev);
  ev.data.u64 = kListenTag;
  epoll_ctl(t->epoll_fd_, EPOLL_CTL_ADD, t->listen_fd_, &ev);
  t->discard_.resize(64 * 1024);
  TcpTransport* raw = t.get();
  t->thread_ = std::thread([raw] { raw->Run(); });
  return t;
}

TcpTransport::~TcpTransport() {
  stopping_ = true;
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  for (auto& [fd, c] : conns_) close(fd);
  for (int fd : {listen_fd_, epoll_fd_, wake_fd_, events_fd_}) {
    if (fd >= 0) close(fd);
  }
}

Result<uint64_t> TcpTransport::RegisterRegion(void* base, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(regions_mu_);
  const uint64_t key = next_key_++;
  regions_[key] = {static_cast<uint8_t*>(base), bytes};
  return key;
}

void TcpTransport::DeregisterRegion(uint64_t key) {
  std::lock_guard<std::mutex> lock(regions_mu_);
  regions_.erase(key);
}

void TcpTransport::Enqueue(Command c) {
  {
    std::lock_guard<std::mutex> lock(commands_mu_);
    commands_.push_back(std::move(c));
  }
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

Status TcpTransport::Connect(const std::string& peer, const std::string& address) {
  Command c;
  c.kind = Command::Kind::kConnect;
  c.peer = peer;
  c.address = address;
  Enqueue(std::move(c));
  return Status::Ok();
}

Status TcpTransport::Put(const std::string& peer, const std::vector<LocalPiece>& pieces, uint64_t remote_key,
                         uint64_t remote_offset, uint32_t imm, uint64_t cookie) {
  uint64_t bytes = 0;
  for (const LocalPiece& p : pieces) bytes += p.bytes;
  Command c;
  c.kind = Command::Kind::kPut;
  c.peer = peer;
  c.out = MakeFrame(kPut, imm, remote_key, remote_offset, bytes);
  c.out.pieces = pieces;
  c.out.is_put = true;
  c.out.cookie = cookie;
  Enqueue(std::move(c));
  return Status::Ok();
}

Status TcpTransport::Send(const std::string& peer, const std::string& message) {
  if (message.size() > kMaxMessage) return Status(Code::kInvalidArgument, "transport message too large");
  Command c;
  c.kind = Command::Kind::kSend;
  c.peer = peer;
  c.out = MakeFrame(kMessage, 0, 0, 0, message.size());
  c.out.owned = message;
  Enqueue(std::move(c));
  return Status::Ok();
}

void TcpTransport::Poll(std::vector<TransportEvent>* out) {
  // Called on every pass of a spinning engine: stay off syscalls and locks when idle.
  if (!has_events_.load(std::memory_order_acquire)) return;
  // The eventfd is written and drained under the lock, so it is readable exactly while
  // events are pending (else an epoll waiting on it would spin).
  std::lock_guard<std::mutex> lock(events_mu_);
  uint64_t v;
  (void)!read(events_fd_, &v, sizeof(v));
  has_events_.store(false, std::memory_order_release);
  for (auto& e : events_) out->push_back(std::move(e));
  events_.clear();
}

std::vector<std::string> TcpTransport::connected_peers() const {
  std::lock_guard<std::mutex> lock(peers_mu_);
  return peers_;
}

void TcpTransport::Emit(TransportEvent e) {
  std::lock_guard<std::mutex> lock(events_mu_);
  events_.push_back(std::move(e));
  has_events_.store(true, std::memory_order_release);
  uint64_t one = 1;
  (void)!write(events_fd_, &one, sizeof(one));
}

void TcpTransport::WatchWrites(Conn* c) {
  struct epoll_event ev = {};
  ev.events = EPOLLIN | EPOLLRDHUP | ((c->out.empty() && !c->connecting) ? 0u : static_cast<uint32_t>(EPOLLOUT));
  ev.data.u64 = static_cast<uint64_t>(c->fd);
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
}

void TcpTransport::Apply(Command& c) {
  if (c.kind == Command::Kind::kConnect) {
    if (by_peer_.count(c.peer) != 0) return;
    // The node whose name sorts first dials; the other waits for the hello.
    if (self_ < c.peer) {
      bool dialling = false;
      for (auto& [fd, conn] : conns_) dialling |= conn->peer == c.peer;
      if (!dialling) Dial(c.peer, c.address);
    }
    return;
  }
  auto it = by_peer_.find(c.peer);
  if (it == by_peer_.end()) {
    pending_[c.peer].push_back(std::move(c.out));
    return;
  }
  it->second->out.push_back(std::move(c.out));
  OnWritable(it->second);
}

void TcpTransport::Dial(const std::string& peer, const std::string& address) {
  std::string host, port;
  auto fail = [&](const std::string& why) {
    spdlog::warn("data connection to {} ({}): {}", peer, address, why);
    pending_.erase(peer);
    Emit({TransportEvent::Kind::kPeerDown, peer, 0, 0, 0, "cannot connect to " + address + ": " + why});
  };
  if (!SplitAddress(address, &host, &port)) return fail("not a host:port address");
  struct addrinfo hints = {};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || res == nullptr) return fail("cannot resolve");
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int r = connect(fd, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  if (r != 0 && errno != EINPROGRESS) {
    const int err = errno;
    close(fd);
    return fail(std::strerror(err));
  }
  Tune(fd);
  auto conn = std::make_unique<Conn>();
  conn->fd = fd;
  conn->peer = peer;
  conn->connecting = true;
  Outgoing hello = MakeFrame(kHello, 0, 0, 0, self_.size());
  hello.owned = self_;
  conn->out.push_back(std::move(hello));
  struct epoll_event ev = {};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP;
  ev.data.u64 = static_cast<uint64_t>(fd);
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  conns_[fd] = std::move(conn);
}

void TcpTransport::Accept() {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    Tune(fd);
    auto conn = std::make_unique<Conn>();
    conn->fd = fd;
    struct epoll_event ev = {};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = static_cast<uint64_t>(fd);
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    conns_[fd] = std::move(conn);
  }
}

void TcpTransport::Established(Conn* c, const std::string& peer) {
  auto old = by_peer_.find(peer);
  if (old != by_peer_.end() && old->second != c) {
    // The peer restarted and dialled again: the old connection is dead even if we missed it.
    Close(old->second, "replaced by a new connection from the peer");
  }
  c->peer = peer;
  by_peer_[peer] = c;
  established_ = by_peer_.size();
  {
    std::lock_guard<std::mutex> lock(peers_mu_);
    peers_.clear();
    for (auto& [name, conn] : by_peer_) peers_.push_back(name);
  }
  auto queued = pending_.find(peer);
  if (queued != pending_.end()) {
    for (auto& o : queued->second) c->out.push_back(std::move(o));
    pending_.erase(queued);
  }
  spdlog::info("data connection with {} established", peer);
  WatchWrites(c);
}

void TcpTransport::Close(Conn* c, const std::string& reason) {
  const std::string peer = c->peer;
  const int fd = c->fd;
  auto bp = by_peer_.find(peer);
  const bool was_established = bp != by_peer_.end() && bp->second == c;
  if (was_established) by_peer_.erase(bp);
  established_ = by_peer_.size();
  {
    std::lock_guard<std::mutex> lock(peers_mu_);
    peers_.clear();
    for (auto& [name, conn] : by_peer_) peers_.push_back(name);
  }
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  conns_.erase(fd);  // c is gone from here on
  if (!peer.empty()) {
    spdlog::warn("data connection with {} closed: {}", peer, reason);
    pending_.erase(peer);
    Emit({TransportEvent::Kind::kPeerDown, peer, 0, 0, 0, reason});
  }
}

void TcpTransport::OnWritable(Conn* c) {
  if (c->connecting) {
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err == EINPROGRESS || err == EALREADY) return;
    if (err != 0) return Close(c, std::string("connect failed: ") + std::strerror(err));
    c->connecting = false;
    Established(c, c->peer);
  }
  while (!c->out.empty()) {
    Outgoing& o = c->out.front();
    constexpr int kMaxIov = 64;
    struct iovec iov[kMaxIov];
    int n = 0;
    if (o.header_sent < sizeof(o.header)) iov[n++] = {o.header + o.header_sent, sizeof(o.header) - o.header_sent};
    if (o.sent < o.bytes && o.pieces.empty()) {
      iov[n++] = {const_cast<char*>(o.owned.data() + o.sent), o.bytes - o.sent};
    } else if (o.sent < o.bytes) {
      // The pieces from where the last write stopped; the rest goes on the next pass.
      uint64_t skip = o.sent;
      for (const LocalPiece& p : o.pieces) {
        if (n == kMaxIov) break;
        if (skip >= p.bytes) {
          skip -= p.bytes;
          continue;
        }
        iov[n++] = {const_cast<uint8_t*>(static_cast<const uint8_t*>(p.base) + skip), p.bytes - skip};
        skip = 0;
      }
    }
    ssize_t w = n == 0 ? 0 : writev(c->fd, iov, n);
    if (w < 0) {
      if (errno == EAGAIN || errno == EINTR) break;
      return Close(c, std::string("write failed: ") + std::strerror(errno));
    }
    size_t left = static_cast<size_t>(w);
    const size_t h = std::min(left, sizeof(o.header) - o.header_sent);
    o.header_sent += h;
    left -= h;
    o.sent += left;
    if (o.header_sent < sizeof(o.header) || o.sent < o.bytes) break;
    if (o.is_put) Emit({TransportEvent::Kind::kPutDone, c->peer, 0, o.cookie, o.bytes, ""});
    c->out.pop_front();
  }
  WatchWrites(c);
}

bool TcpTransport::OnFrameDone(Conn* c) {
  const Frame& f = c->frame;
  switch (f.type) {
    case kHello:
      if (!c->peer.empty()) return false;
      Established(c, c->message);
      return true;
    case kPut:
      // A put whose region was gone (or out of bounds) was drained, not delivered.
      if (!c->dropped) Emit({TransportEvent::Kind::kArrived, c->peer, f.imm, 0, f.bytes, ""});
      return true;
    case kMessage:
      Emit({TransportEvent::Kind::kMessage, c->peer, 0, 0, 0, std::move(c->message)});
      return true;
  }
  return false;
}

bool TcpTransport::ReadPayload(Conn* c) {
  const Frame& f = c->frame;
  while (c->payload_got < f.bytes) {
    const uint64_t want = f.bytes - c->payload_got;
    ssize_t r;
    if (f.type == kPut) {
      std::lock_guard<std::mutex> lock(regions_mu_);
      auto it = regions_.find(f.key);
      uint8_t* dst = nullptr;
      if (it != regions_.end() && f.offset <= it->second.bytes && f.bytes <= it->second.bytes - f.offset) {
        dst = it->second.base + f.offset + c->payload_got;
        r = read(c->fd, dst, want);
      } else {
        c->dropped = true;
        // A region already closed (its group ended) or out of bounds: drain and drop.
        r = read(c->fd, discard_.data(), std::min<uint64_t>(want, discard_.size()));
      }
    } else {
      const size_t at = c->message.size();
      c->message.resize(f.bytes);
      r = read(c->fd, c->message.data() + at, want);
      c->message.resize(at + (r > 0 ? static_cast<size_t>(r) : 0));
    }
    if (r < 0) return errno == EAGAIN || errno == EINTR;
    if (r == 0) return false;
    c->payload_got += static_cast<uint64_t>(r);
  }
  return true;
}

void TcpTransport::OnReadable(Conn* c) {
  for (;;) {
    if (!c->in_payload) {
      ssize_t r = read(c->fd, c->header + c->header_got, sizeof(c->header) - c->header_got);
      if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
      if (r <= 0) return Close(c, r == 0 ? "closed by the peer" : std::string("read failed: ") + std::strerror(errno));
      c->header_got += static_cast<size_t>(r);
      if (c->header_got < sizeof(c->header)) continue;
      const uint32_t word = Get32(c->header);
      Frame f{word & 0xffff, Get32(c->header + 4), Get64(c->header + 8), Get64(c->header + 16), Get64(c->header + 24)};
      const bool valid = (word & 0xffff0000) == kMagic &&
                         ((f.type == kHello && f.bytes >= 1 && f.bytes <= kMaxHello) ||
                          (f.type == kMessage && f.bytes <= kMaxMessage) ||
                          f.type == kPut) &&
                         (f.type == kHello || !c->peer.empty());
      if (!valid) return Close(c, "protocol error (not an ohio peer, or a version mismatch)");
      c->frame = f;
      c->header_got = 0;
      c->payload_got = 0;
      c->message.clear();
      c->dropped = false;
      c->in_payload = true;
    }
    const uint64_t before = c->payload_got;
    if (!ReadPayload(c)) return Close(c, "closed by the peer mid-frame");
    if (c->payload_got < c->frame.bytes) {
      if (c->payload_got == before) return;  // EAGAIN
      continue;
    }
    c->in_payload = false;
    if (!OnFrameDone(c)) return Close(c, "protocol error (unexpected hello)");
  }
}

void TcpTransport::Run() {
  struct epoll_event events[64];
  while (!stopping_) {
    int n = epoll_wait(epoll_fd_, events, 64, -1);
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kWakeTag) {
        uint64_t v;
        (void)!read(wake_fd_, &v, sizeof(v));
        std::deque<Command> commands;
        {
          std::lock_guard<std::mutex> lock(commands_mu_);
          commands.swap(commands_);
        }
        for (auto& c : commands) Apply(c);
        continue;
      }
      if (tag == kListenTag) {
        Accept();
        continue;
      }
      auto it = conns_.find(static_cast<int>(tag));
      if (it == conns_.end()) continue;
      Conn* c = it->second.get();
      if (events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
        OnReadable(c);
        if (conns_.find(static_cast<int>(tag)) == conns_.end()) continue;
      }
      if (events[i].events & EPOLLOUT) OnWritable(c);
    }
  }
}

}  // namespace ohio
