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
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include <spdlog/spdlog.h>

#include "common/tcp_listen.h"
#include "common/unauthenticated_cap.h"


namespace ohio {
namespace {

constexpr uint32_t kHello = TcpFrameHeader::kHello;
constexpr uint64_t kWakeTag = ~uint64_t{0};
constexpr uint64_t kListenTag = ~uint64_t{0} - 1;
constexpr uint64_t kTimerTag = ~uint64_t{0} - 2;
// How long the listener rests when no descriptor is free for a new connection.
constexpr auto kListenerRest = std::chrono::milliseconds(100);
constexpr int kMaxEvents = 64;

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
  auto listening = ListenTcp(bind_host, port, "data port");
  if (!listening.ok()) return listening.status();
  t->listen_fd_ = listening.value();
  t->address_ = advertised_host + ":" + std::to_string(BoundPort(t->listen_fd_));
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
  s.refusals = refusals_.Read();
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
  TcpFrameHeader{kHello, 0, 0, 0, hello.bytes}.Encode(hello.header);
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
    const Remote remote = RemoteOf(fd);
    const std::string& where = remote.where;
    const uint32_t source = remote.address;
    const size_t of_source = unauthenticated_by_source_[source];
    const auto refusal = JudgeUnauthenticated(unauthenticated_, of_source, limits_.max_unauthenticated, remote.host,
                                              "max-unauthenticated-data-connections", "have not said hello yet");
    if (refusal) {
      refusals_.Count(refusal->reason);
      if (of_source == 0) unauthenticated_by_source_.erase(source);
      uint64_t suppressed = 0;
      if (refused_log_.Allow(&suppressed)) {
        spdlog::warn("data port: refused a connection from {}: {}{}", where, refusal->why, SuppressedNote(suppressed));
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
  ArmTimer();  // its deadline no longer wakes the engine
}

bool TcpTransport::AwaitsHello(const HelloDeadline& d) const {
  auto it = conns_.find(d.fd);
  return it != conns_.end() && it->second->serial == d.serial && it->second->awaiting_hello;
}

void TcpTransport::OutOfDescriptors(int err) {
  const int shed = reserve_.ShedPending(listen_fd_);
  refusals_.Count(ConnectionRefusal::kOutOfDescriptors, static_cast<uint64_t>(shed));
  uint64_t suppressed = 0;
  if (accept_log_.Allow(&suppressed)) {
    spdlog::warn("data port: accept: {}; closed {} pending connection(s), not accepting for {} ms{}",
                 std::strerror(err), shed, kListenerRest.count(), SuppressedNote(suppressed));
  }
  listener_.Rest(epoll_fd_, listen_fd_, Clock::now() + kListenerRest);
  ArmTimer();
}

void TcpTransport::ArmTimer() {
  // Deadlines of connections that have said hello (or closed) since are not waited for: an idle
  // daemon's engine would otherwise wake hello-timeout-ms after each connection it accepted.
  while (!hello_deadlines_.empty() && !AwaitsHello(hello_deadlines_.front())) hello_deadlines_.pop_front();
  std::optional<Clock::time_point> due;
  auto consider = [&](Clock::time_point t) {
    if (!due || t < *due) due = t;
  };
  if (!hello_deadlines_.empty()) consider(hello_deadlines_.front().at);
  if (listener_.resting()) consider(listener_.until());
  if (frames_left_open_ > 0) {
    for (const auto& [fd, c] : conns_) {
      if (c->frame_since != Clock::time_point{}) consider(c->frame_since + limits_.frame_timeout);
    }
  }
  for (const LogRateLimiter* log : {&accept_log_, &refused_log_, &hello_log_, &malformed_log_, &frame_log_}) {
    if (log->has_suppressed()) consider(log->summary_due());
  }
  timer_due_ = due;
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
    if (!AwaitsHello(d)) continue;
    refusals_.Count(ConnectionRefusal::kAuthTimeout);
    uint64_t suppressed = 0;
    if (hello_log_.Allow(&suppressed, now)) {
      spdlog::warn("data port: closed the connection from {}: no hello within hello-timeout-ms = {}{}",
                   it->second->from, limits_.hello_timeout.count(), SuppressedNote(suppressed));
    }
    Close(it->second.get(), "no hello within the hello timeout");
  }
  if (frames_left_open_ > 0) CloseStalledFrames(now);
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
  if (uint64_t n = malformed_log_.TakeSuppressed(now)) {
    spdlog::warn("data port: {} similar messages suppressed (no hello of this protocol)", n);
  }
  if (uint64_t n = frame_log_.TakeSuppressed(now)) {
    spdlog::warn("data port: {} similar messages suppressed (frames left unfinished)", n);
  }
  ArmTimer();
}

void TcpTransport::CloseStalledFrames(Clock::time_point now) {
  std::vector<int> stalled;
  for (const auto& [fd, c] : conns_) {
    if (c->frame_since != Clock::time_point{} && now - c->frame_since >= limits_.frame_timeout) stalled.push_back(fd);
  }
  for (int fd : stalled) {
    refusals_.Count(ConnectionRefusal::kFrameTimeout);
    Close(conns_[fd].get(),
          "a frame begun more than data-frame-timeout-ms = " + std::to_string(limits_.frame_timeout.count()) +
              " ago is unfinished",
          &frame_log_);
  }
}

void TcpTransport::CloseMalformed(Conn* c, const std::string& why) {
  if (!c->named) {
    refusals_.Count(ConnectionRefusal::kMalformed);
    uint64_t suppressed = 0;
    if (malformed_log_.Allow(&suppressed)) {
      spdlog::warn("data port: closed the connection from {}: {}{}", c->from, why, SuppressedNote(suppressed));
    }
    ArmTimer();  // to tell of suppressed lines
  }
  Close(c, why);
}

void TcpTransport::FrameLeftOpen(Conn* c) {
  if (!c->named || c->frame_since != Clock::time_point{} || (c->header_got == 0 && !c->in_payload)) return;
  c->frame_since = Clock::now();
  ++frames_left_open_;
  if (!timer_due_ || c->frame_since + limits_.frame_timeout < *timer_due_) ArmTimer();
}

void TcpTransport::FrameDone(Conn* c) {
  if (c->frame_since == Clock::time_point{}) return;
  c->frame_since = Clock::time_point{};
  // The last frame left open is done: its deadline no longer wakes the engine (an idle daemon's
  // would otherwise wake data-frame-timeout-ms after a large frame read in pieces).
  if (--frames_left_open_ == 0 && timer_due_) ArmTimer();
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

void TcpTransport::Close(Conn* c, const std::string& reason, LogRateLimiter* log) {
  const bool named = c->named;
  const PeerId peer = c->peer;
  const int fd = c->fd;
  const bool never_up = c->connecting;  // a dial refused or unanswered
  const std::string why = never_up ? "cannot connect to " + c->from + ": " + reason : reason;
  const bool current = named && Slot(peer).conn == c;
  if (current) Slot(peer).conn = nullptr;
  HelloSeen(c);
  FrameDone(c);
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  conns_.erase(fd);  // c is gone from here on
  if (current) PeersChanged();
  if (named) {
    uint64_t suppressed = 0;
    if (log == nullptr) {
      spdlog::warn("data connection with {} closed: {}", directory_.Name(peer), why);
    } else if (log->Allow(&suppressed)) {
      spdlog::warn("data connection with {} closed: {}{}", directory_.Name(peer), why, SuppressedNote(suppressed));
    }
    Slot(peer).pending.clear();
    TransportEvent e;
    e.kind = TransportEvent::Kind::kPeerDown;
    e.peer = peer;
    e.reason = why;
    e.never_up = never_up;
    Emit(std::move(e));
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