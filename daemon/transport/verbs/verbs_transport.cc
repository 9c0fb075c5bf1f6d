// The transport's life (start and stop), the puts and sends it hands to the peers' lines
// (peer_lines.h), and what it reports; the rest of VerbsTransport is in the files its header
// names.
#include "daemon/transport/verbs/verbs_transport.h"

#include <sys/epoll.h>
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
  std::vector<Rail*> rail_list;
  for (const auto& r : t->rails_) rail_list.push_back(r.get());
  t->connector_ = std::make_unique<RcConnector>(rail_list);
  t->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (t->epoll_fd_ < 0) return SystemError("epoll", errno);
  auto outbox = EventOutbox::Create();
  if (!outbox.ok()) return outbox.status();
  t->outbox_ = std::move(outbox.value());
  struct epoll_event ev {};
  ev.events = EPOLLIN;
  if (epoll_ctl(t->epoll_fd_, EPOLL_CTL_ADD, t->outbox_->wake_fd(), &ev) != 0) return SystemError("epoll_ctl", errno);
  std::vector<ibv_pd*> pds;
  std::vector<std::unique_ptr<BouncePool>> pools;
  for (const auto& r : t->rails_) {
    if (epoll_ctl(t->epoll_fd_, EPOLL_CTL_ADD, r->channel()->fd, &ev) != 0) return SystemError("epoll_ctl", errno);
    pds.push_back(r->pd());
    // The bounce buffers are registered now, so that a group's first collective never waits
    // for a registration.
    auto pool = BouncePool::Create(*r);
    if (!pool.ok()) return pool.status();
    pools.push_back(std::move(pool.value()));
  }
  // The UD service, unless every peer gets an RC queue pair: a datagram queue pair per rail, and
  // a timer that wakes a sleeping engine when a datagram is due to be sent again. It calls back
  // under mu_, which every call into it holds.
  VerbsTransport* raw = t.get();
  t->rc_ = std::make_unique<RcPoster>(std::move(pools), &t->stats_, [raw](PeerId peer, const std::string& reason) {
    raw->PeerDown(peer, reason);
  });
  DatagramService::Host host;
  host.emit = [raw](TransportEvent e) { raw->outbox_->Emit(std::move(e)); };
  host.lose_peer = [raw](PeerId peer, const std::string& reason) { raw->PeerDown(peer, reason); };
  host.name = [raw](PeerId peer) { return raw->directory_.Name(peer); };
  host.arrived = [raw](PeerId peer) {
    // The first datagram of a peer that started a move to UD, which this node answered: its
    // end is ready, and our line goes on UD from now on.
    if (raw->Peer(peer).move.FirstOnNewService(/*rc=*/false)) raw->moves_->FinishToUd(peer, nullptr);
  };
  host.move_notice = [raw](PeerId peer, const MoveNotice& n) {
    raw->Peer(peer);
    raw->moves_->OnNotice(peer, n);
  };
  host.open_region = [raw](uint64_t key) -> std::optional<DatagramService::OpenRegion> {
    const LocalRegion* r = raw->regions_->FindWritable(key);
    if (r == nullptr) return std::nullopt;
    return DatagramService::OpenRegion{r->base, r->bytes};
  };
  auto datagrams = DatagramService::Create(options.rc_pool != kUnlimitedRcPool ? rail_list : std::vector<Rail*>{}, {options.datagrams, options.drop_one_datagram_in},
                                           std::move(host), &t->stats_);
  if (!datagrams.ok()) return datagrams.status();
  t->datagrams_ = std::move(datagrams.value());
  if (t->datagrams_->timer_fd() >= 0) {
    ev.events = EPOLLIN;
    if (epoll_ctl(t->epoll_fd_, EPOLL_CTL_ADD, t->datagrams_->timer_fd(), &ev) != 0) {
      return SystemError("epoll_ctl", errno);
    }
  }
  t->stats_.rc_pool = options.rc_pool;
  // Planned by traffic when the pool bounds something and leaves something to choose; with an
  // interval of 0 the pool goes to the first peers connected, and stays theirs.
  std::unique_ptr<RcPoolPlan> plan;
  if (options.rc_pool != kUnlimitedRcPool && options.rc_pool != 0 && options.rc_pool_interval.count() > 0) {
    RcPoolOptions plan_options;
    plan_options.capacity = options.rc_pool;
    plan_options.mtu = t->datagrams_->payload_bytes();
    plan = std::make_unique<RcPoolPlan>(plan_options);
  }
  MoveDriver::Host movers;
  movers.flush = [raw](PeerId peer) { raw->lines_->Flush(peer); };
  movers.lose_peer = [raw](PeerId peer, const std::string& reason) { raw->PeerDown(peer, reason); };
  movers.adopt = [raw](PeerId peer, MoveDriver::Connections conns) {
    PeerState& p = raw->Peer(peer);
    raw->Adopt(p, std::move(conns), peer, p.incarnation, p.dial_floor);
  };
  movers.forget_peer_in_closing = [raw](PeerId peer) { raw->regions_->ForgetPeer(peer); };
  movers.release_in_flight = [raw](PeerId peer) { raw->rc_->ReleasePeer(peer); };
  movers.any_in_flight = [raw](PeerId peer) { return raw->rc_->AnyFor(peer); };
  movers.emit = [raw](TransportEvent e) { raw->outbox_->Emit(std::move(e)); };
  movers.name = [raw](PeerId peer) { return raw->directory_.Name(peer); };
  t->moves_ = std::make_unique<MoveDriver>(
      self, MoveDriver::Options{options.rc_pool, options.rc_pool_interval, options.datagrams.give_up_after},
      std::move(plan), &t->peers_, t->connector_.get(), t->datagrams_.get(), &t->stats_, std::move(movers));
  t->registrar_ = std::make_unique<MemoryRegistrar>(
      std::move(pds), options.registration_delay,
      [raw](uint64_t key, std::vector<ibv_mr*> mrs, Status status) { raw->OnRegistered(key, std::move(mrs), status); });
  t->regions_ = std::make_unique<RegionTable>(t->registrar_.get(), &t->stats_);
  t->lines_ = std::make_unique<PeerLines>(&t->peers_, t->rc_.get(), t->datagrams_.get(), t->regions_.get(), &t->stats_);
  CompletionDispatcher::Parts parts;
  parts.rails = rail_list;
  parts.peers = &t->peers_;
  parts.directory = &t->directory_;
  parts.connector = t->connector_.get();
  parts.rc = t->rc_.get();
  parts.datagrams = t->datagrams_.get();
  parts.moves = t->moves_.get();
  parts.regions = t->regions_.get();
  parts.lines = t->lines_.get();
  parts.events = t->outbox_.get();
  parts.stats = &t->stats_;
  t->completions_ = std::make_unique<CompletionDispatcher>(
      std::move(parts),
      [raw](PeerId peer, const std::string& reason, bool never_up) { raw->PeerDown(peer, reason, never_up); });
  for (const auto& r : t->rails_) t->stats_.rails.push_back(r->name());
  t->stats_.rail_put_bytes.assign(t->rails_.size(), 0);
  return t;
}

VerbsTransport::~VerbsTransport() {
  registrar_.reset();  // its thread calls back into this object
  std::lock_guard<std::mutex> lock(mu_);
  connector_->ForgetAll();
  peers_.clear();
  datagrams_.reset();
  regions_.reset();  // deregisters what is still registered
  rc_.reset();  // its bounce slots
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

void VerbsTransport::set_dialer(Dialer dialer) {
  std::lock_guard<std::mutex> lock(mu_);
  dialer_ = std::move(dialer);
}

void VerbsTransport::set_rtr_retry_budget(std::chrono::milliseconds budget) {
  connector_->set_rtr_retry_budget(budget);
}

Status VerbsTransport::Put(PeerId peer, const LocalPiece* pieces, size_t count, uint64_t remote_key,
                           uint64_t remote_offset, uint32_t imm, uint64_t cookie) {
  Op op;
  op.kind = Op::Kind::kPut;
  op.key = remote_key;
  op.offset = remote_offset;
  for (size_t i = 0; i < count; ++i) op.total += pieces[i].bytes;
  op.imm = imm;
  op.cookie = cookie;
  std::lock_guard<std::mutex> lock(mu_);
  Peer(peer);
  lines_->Put(peer, std::move(op), pieces, count);
  return Status::Ok();
}

Status VerbsTransport::Send(PeerId peer, const void* message, size_t bytes) {
  if (bytes > kMaxTransportMessage) return Status(Code::kInvalidArgument, "transport message too large");
  std::lock_guard<std::mutex> lock(mu_);
  Peer(peer);
  lines_->Send(peer, message, bytes);
  return Status::Ok();
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
  s.rtr_retries = connector_->rtr_retries();
  s.queue_pairs = 0;
  s.registrations_pending = 0;
  for (const PeerState& p : peers_) {
    if (p.state == PeerState::State::kConnected) s.queue_pairs += static_cast<uint32_t>(p.rc.conns.size());
    if (p.state == PeerState::State::kConnected && p.pool.ud_service) ++s.datagram_peers;
  }
  s.registrations_pending = regions_->pending();
  return s;
}

}  // namespace ohio
