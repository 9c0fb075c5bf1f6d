#include "daemon/peers/peer_port_gate.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <grpcpp/server_posix.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "common/tcp_listen.h"
#include "common/unauthenticated_cap.h"

namespace ohio {
namespace {

constexpr uint64_t kListenTag = ~uint64_t{0};
constexpr uint64_t kWakeTag = ~uint64_t{0} - 1;
// How long the listener rests when no descriptor is free for a new connection.
constexpr auto kListenerRest = std::chrono::milliseconds(100);
constexpr int kMaxEvents = 64;
constexpr char kGrpcFdPrefix[] = "fd:";

// The descriptor number in gRPC's name for a connection it was handed ("fd:N"); -1 if none.
int GrpcFd(const std::string& grpc_peer) {
  if (grpc_peer.rfind(kGrpcFdPrefix, 0) != 0) return -1;
  const std::string digits = grpc_peer.substr(sizeof(kGrpcFdPrefix) - 1);
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(digits);
}

}  // namespace

Result<std::unique_ptr<PeerPortGate>> PeerPortGate::Listen(const std::string& host, uint16_t port, Limits limits,
                                                           PeerAuth* auth) {
  std::unique_ptr<PeerPortGate> g(new PeerPortGate(auth, limits));
  // Never SO_REUSEPORT (gRPC's default), with which a second ohiod on the same port would start
  // and take a share of the peers' connections.
  auto listening = ListenTcp(host, port, "peer port");
  if (!listening.ok()) return listening.status();
  g->listen_fd_ = listening.value();
  g->port_ = BoundPort(g->listen_fd_);
  g->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  g->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (g->epoll_fd_ < 0 || g->wake_fd_ < 0) return SystemError("epoll/eventfd", errno);
  struct epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeTag;
  if (epoll_ctl(g->epoll_fd_, EPOLL_CTL_ADD, g->wake_fd_, &ev) != 0) return SystemError("epoll_ctl", errno);
  ev.data.u64 = kListenTag;
  if (epoll_ctl(g->epoll_fd_, EPOLL_CTL_ADD, g->listen_fd_, &ev) != 0) return SystemError("epoll_ctl", errno);
  // Summaries of credential refusals' suppressed lines are written by this thread: wake it.
  const int wake_fd = g->wake_fd_;
  auth->set_on_suppressed([wake_fd] {
    uint64_t one = 1;
    (void)!write(wake_fd, &one, sizeof(one));
  });
  return g;
}

PeerPortGate::~PeerPortGate() {
  Stop();
  auth_->set_on_suppressed(nullptr);
  for (int fd : {listen_fd_, epoll_fd_, wake_fd_}) {
    if (fd >= 0) close(fd);
  }
}

void PeerPortGate::Serve(grpc::Server* server) {
  server_ = server;
  thread_ = std::thread([this] { Run(); });
}

void PeerPortGate::Stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> serials;
  for (const auto& [serial, p] : pending_) serials.push_back(serial);
  for (uint64_t serial : serials) Forget(serial);
}

size_t PeerPortGate::unauthenticated() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size();
}

void PeerPortGate::Authenticated(const std::string& grpc_peer) {
  const int fd = GrpcFd(grpc_peer);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_by_grpc_fd_.find(fd);
  if (it != pending_by_grpc_fd_.end()) Forget(it->second);
}

std::string PeerPortGate::RemoteAddress(const std::string& grpc_peer) const {
  const int fd = GrpcFd(grpc_peer);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = remote_by_grpc_fd_.find(fd);
  return it == remote_by_grpc_fd_.end() ? grpc_peer : it->second;
}

void PeerPortGate::Forget(uint64_t serial) {
  auto it = pending_.find(serial);
  if (it == pending_.end()) return;
  const Pending& p = it->second;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, p.watch_fd, nullptr);
  close(p.watch_fd);
  pending_by_grpc_fd_.erase(p.grpc_fd);
  auto s = pending_by_source_.find(p.source);
  if (s != pending_by_source_.end() && --s->second == 0) pending_by_source_.erase(s);
  pending_.erase(it);
}

void PeerPortGate::Run() {
  struct epoll_event events[kMaxEvents];
  while (!stopping_) {
    int wait_ms;
    {
      std::lock_guard<std::mutex> lock(mu_);
      wait_ms = NextWakeMs(Clock::now());
    }
    const int n = epoll_wait(epoll_fd_, events, kMaxEvents, wait_ms);
    std::vector<int> admitted;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int i = 0; i < n; ++i) {
        const uint64_t tag = events[i].data.u64;
        if (tag == kWakeTag) {
          uint64_t v;
          (void)!read(wake_fd_, &v, sizeof(v));
        } else if (tag == kListenTag) {
          std::vector<int> more = Accept();
          admitted.insert(admitted.end(), more.begin(), more.end());
        } else {
          // The connection ended (either end) before any call on it was authenticated.
          if (pending_.count(tag) != 0) refusals_.Count(ConnectionRefusal::kClosedUnauthenticated);
          Forget(tag);
        }
      }
      const auto now = Clock::now();
      ExpireDeadlines(now);
      listener_.WakeIfDue(epoll_fd_, listen_fd_, kListenTag, now);
      LogSummaries(now);
    }
    auth_->LogSuppressed();
    // Unlocked: gRPC may call the service (and so Authenticated) from its own threads meanwhile.
    for (int fd : admitted) grpc::AddInsecureChannelFromFd(server_, fd);
  }
}

std::vector<int> PeerPortGate::Accept() {
  std::vector<int> admitted;
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) OutOfDescriptors(errno);
      return admitted;
    }
    const Remote remote = RemoteOf(fd);
    const std::string& where = remote.where;
    const uint32_t source = remote.address;
    auto of_source = pending_by_source_.find(source);
    const auto refusal =
        JudgeUnauthenticated(pending_.size(), of_source == pending_by_source_.end() ? 0 : of_source->second,
                             limits_.max_unauthenticated, remote.host, "max-unauthenticated-peer-connections",
                             "have made no authenticated call yet");
    int watch_fd = -1;
    if (!refusal) watch_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (refusal || watch_fd < 0) {
      uint64_t suppressed = 0;
      if (refusal) {
        refusals_.Count(refusal->reason);
        if (refused_log_.Allow(&suppressed)) {
          spdlog::warn("peer port: refused a connection from {}: {}{}", where, refusal->why, SuppressedNote(suppressed));
        }
      } else {
        refusals_.Count(ConnectionRefusal::kOutOfDescriptors);
        if (accept_log_.Allow(&suppressed)) {
          spdlog::warn("peer port: closed the connection from {}: {}{}", where, std::strerror(errno),
                       SuppressedNote(suppressed));
        }
      }
      close(fd);  // after the line: whoever sees the connection closed finds the reason logged
      continue;
    }
    // As gRPC's own listener would: a peer call is a small request and a small answer.
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    const uint64_t serial = next_serial_++;
    struct epoll_event ev = {};
    ev.events = EPOLLRDHUP;  // not EPOLLIN: gRPC reads the connection; this copy only sees it end
    ev.data.u64 = serial;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, watch_fd, &ev);
    pending_[serial] = Pending{fd, watch_fd, source, where};
    pending_by_grpc_fd_[fd] = serial;
    ++pending_by_source_[source];
    remote_by_grpc_fd_[fd] = where;
    deadlines_.push_back({Clock::now() + limits_.auth_timeout, serial});
    admitted.push_back(fd);
  }
}

void PeerPortGate::OutOfDescriptors(int err) {
  const int shed = reserve_.ShedPending(listen_fd_);
  refusals_.Count(ConnectionRefusal::kOutOfDescriptors, static_cast<uint64_t>(shed));
  uint64_t suppressed = 0;
  if (accept_log_.Allow(&suppressed)) {
    spdlog::warn("peer port: accept: {}; closed {} pending connection(s), not accepting for {} ms{}",
                 std::strerror(err), shed, kListenerRest.count(), SuppressedNote(suppressed));
  }
  listener_.Rest(epoll_fd_, listen_fd_, Clock::now() + kListenerRest);
}

void PeerPortGate::ExpireDeadlines(Clock::time_point now) {
  while (!deadlines_.empty() && deadlines_.front().at <= now) {
    const uint64_t serial = deadlines_.front().serial;
    deadlines_.pop_front();
    auto it = pending_.find(serial);
    if (it == pending_.end()) continue;  // authenticated or gone since
    refusals_.Count(ConnectionRefusal::kAuthTimeout);
    uint64_t suppressed = 0;
    if (timeout_log_.Allow(&suppressed, now)) {
      spdlog::warn("peer port: closed the connection from {}: no authenticated call within hello-timeout-ms = {}{}",
                   it->second.from, limits_.auth_timeout.count(), SuppressedNote(suppressed));
    }
    // gRPC sees the connection fail and closes its descriptor.
    shutdown(it->second.watch_fd, SHUT_RDWR);
    Forget(serial);
  }
}

void PeerPortGate::LogSummaries(Clock::time_point now) {
  if (uint64_t n = refused_log_.TakeSuppressed(now)) {
    spdlog::warn("peer port: {} similar messages suppressed (connections refused)", n);
  }
  if (uint64_t n = timeout_log_.TakeSuppressed(now)) {
    spdlog::warn("peer port: {} similar messages suppressed (no authenticated call in time)", n);
  }
  if (uint64_t n = accept_log_.TakeSuppressed(now)) {
    spdlog::warn("peer port: {} similar messages suppressed (out of descriptors)", n);
  }
}

int PeerPortGate::NextWakeMs(Clock::time_point now) {
  std::optional<Clock::time_point> due;
  auto consider = [&](Clock::time_point t) {
    if (!due || t < *due) due = t;
  };
  while (!deadlines_.empty() && pending_.count(deadlines_.front().serial) == 0) deadlines_.pop_front();
  if (!deadlines_.empty()) consider(deadlines_.front().at);
  if (listener_.resting()) consider(listener_.until());
  for (const LogRateLimiter* log : {&refused_log_, &timeout_log_, &accept_log_}) {
    if (log->has_suppressed()) consider(log->summary_due());
  }
  if (auto d = auth_->SummaryDue()) consider(*d);
  if (!due) return -1;
  if (*due <= now) return 0;
  // Rounded up: a wake a little early would find nothing due and wait again at once.
  return static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(*due - now).count());
}

}  // namespace ohio
