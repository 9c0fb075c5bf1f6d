// The transport's life (start and stop) and what it reports; the rest of VerbsTransport is in
// the files its header names.
#include "daemon/transport/verbs/verbs_transport.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <random>

namespace ohio {

Result<std::unique_ptr<VerbsTransport>> VerbsTransport::Start(const std::string& self,
                                                              std::vector<std::unique_ptr<Rail>> rails,
                                                              Options options) {
  if (rails.empty()) return Status(Code::kInvalidArgument, "the verbs transport needs at least one rail");
  std::unique_ptr<VerbsTransport> t(new VerbsTransport());
  t->self_ = self;
  t->options_ = options;
  t->incarnation_ = std::random_device{}() | uint64_t{std::random_device{}()} << 32 | 1;
  t->rails_ = std::move(rails);
  t->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  t->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (t->epoll_fd_ < 0 || t->wake_fd_ < 0) return SystemError("epoll/eventfd", errno);
  struct epoll_event ev {};
  ev.events = EPOLLIN;
  if (epoll_ctl(t->epoll_fd_, EPOLL_CTL_ADD, t->wake_fd_, &ev) != 0) return SystemError("epoll_ctl", errno);
  std::vector<ibv_pd*> pds;
  for (const auto& r : t->rails_) {
    if (epoll_ctl(t->epoll_fd_, EPOLL_CTL_ADD, r->channel()->fd, &ev) != 0) return SystemError("epoll_ctl", errno);
    pds.push_back(r->pd());
    // The bounce buffers are registered now, so that a group's first collective never waits
    // for a registration.
    auto pool = BouncePool::Create(*r);
    if (!pool.ok()) return pool.status();
    t->pools_.push_back(std::move(pool.value()));
  }
  // The UD service, unless every peer gets an RC queue pair: a datagram queue pair per rail, and
  // a timer that wakes a sleeping engine when a datagram is due to be sent again.
  if (options.rc_pool != kUnlimitedRcPool) {
    for (size_t r = 0; r < t->rails_.size(); ++r) {
      auto q = UdQueuePair::Create(*t->rails_[r], r, verbs_sizes::kUdRecvSlots, verbs_sizes::kUdSendDepth,
                                   verbs_sizes::kUdSendDepth);
      if (!q.ok()) return q.status();
      t->datagram_qps_.push_back(std::move(q.value()));
    }
    t->timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (t->timer_fd_ < 0) return SystemError("timerfd_create", errno);
    if (epoll_ctl(t->epoll_fd_, EPOLL_CTL_ADD, t->timer_fd_, &ev) != 0) return SystemError("epoll_ctl", errno);
  }
  t->stats_.rc_pool = options.rc_pool;
  // Planned by traffic when the pool bounds something and leaves something to choose; with an
  // interval of 0 the pool goes to the first peers connected, and stays theirs.
  if (options.rc_pool != kUnlimitedRcPool && options.rc_pool != 0 && options.rc_pool_interval.count() > 0) {
    RcPoolOptions plan;
    plan.capacity = options.rc_pool;
    plan.mtu = t->datagram_qps_[0]->mtu_bytes() - static_cast<uint32_t>(UdWireHeader::kBytes);
    t->pool_plan_ = std::make_unique<RcPoolPlan>(plan);
  }
  t->last_plan_ = std::chrono::steady_clock::now();
  VerbsTransport* raw = t.get();
  t->registrar_ = std::make_unique<MemoryRegistrar>(
      std::move(pds), options.registration_delay,
      [raw](uint64_t key, std::vector<ibv_mr*> mrs, Status status) { raw->OnRegistered(key, std::move(mrs), status); });
  for (const auto& r : t->rails_) t->stats_.rails.push_back(r->name());
  t->stats_.rail_put_bytes.assign(t->rails_.size(), 0);
  return t;
}

VerbsTransport::~VerbsTransport() {
  registrar_.reset();  // its thread calls back into this object
  std::lock_guard<std::mutex> lock(mu_);
  receivers_.clear();
  peers_.clear();  // their address handles before the datagram queue pairs
  datagram_qps_.clear();
  for (auto& [key, r] : regions_) {
    for (ibv_mr* mr : r.mrs) ibv_dereg_mr(mr);
  }
  pools_.clear();
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
  if (timer_fd_ >= 0) close(timer_fd_);
}

void VerbsTransport::set_dialer(Dialer dialer) {
  std::lock_guard<std::mutex> lock(mu_);
  dialer_ = std::move(dialer);
}

void VerbsTransport::set_rtr_retry_budget(std::chrono::milliseconds budget) {
  rtr_retry_budget_ms_.store(std::clamp(budget, std::chrono::milliseconds::zero(), kRtrRetryBudget).count(),
                             std::memory_order_relaxed);
}

TransportEvent VerbsTransport::Event(TransportEvent::Kind kind, PeerId peer) {
  TransportEvent e;
  e.kind = kind;
  e.peer = peer;
  return e;
}

std::string VerbsTransport::address() const {
  std::string out;
  for (const auto& r : rails_) out += (out.empty() ? "" : ",") + r->name();
  return out;
}

size_t VerbsTransport::connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const PeerState& p : peers_) n += p.state == PeerState::State::kConnected;
  return n;
}

std::vector<std::string> VerbsTransport::connected_peers() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (PeerId id = 0; id < peers_.size(); ++id) {
    if (peers_[id].state == PeerState::State::kConnected) out.push_back(directory_.Name(id));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::map<std::string, std::string> VerbsTransport::peer_links() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::string> out;
  for (PeerId id = 0; id < peers_.size(); ++id) {
    if (peers_[id].state == PeerState::State::kConnected) out[directory_.Name(id)] = peers_[id].pool.ud_service ? "UD" : "RC";
  }
  return out;
}

TransportStats VerbsTransport::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  TransportStats s = stats_;
  s.rtr_retries = rtr_retries_.load(std::memory_order_relaxed);
  s.queue_pairs = 0;
  s.registrations_pending = 0;
  for (const PeerState& p : peers_) {
    if (p.state == PeerState::State::kConnected) s.queue_pairs += static_cast<uint32_t>(p.rc.conns.size());
    if (p.state == PeerState::State::kConnected && p.pool.ud_service) ++s.datagram_peers;
  }
  for (const auto& [key, r] : regions_) s.registrations_pending += r.state == LocalRegion::State::kPending;
  return s;
}

}  // namespace ohio
