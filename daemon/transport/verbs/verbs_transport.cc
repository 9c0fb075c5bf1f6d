#include "daemon/transport/verbs/verbs_transport.h"

#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include <spdlog/spdlog.h>

namespace ohio {
namespace {

// A bounce slot holds one SEND: header and up to 64 KiB - 40 of payload. Big enough that a
// bounced 4 MiB put is 65 sends, small enough that the rings stay a few MiB.
constexpr uint32_t kSlotBytes = 64u << 10;
constexpr uint32_t kPayloadBytes = kSlotBytes - VerbsWireHeader::kBytes;
constexpr uint32_t kSendSlots = 64;    // per rail, shared by every peer
constexpr uint32_t kRecvSlots = 32;    // per connection
constexpr uint32_t kSendDepth = 128;   // work requests in flight per connection
constexpr uint32_t kMaxGather = 30;    // SGEs per work request we ask for (the device may allow fewer)
// A put at least this large, to a peer reached over several rails, is cut into one stripe per
// rail (whole pages), all written at once; below it one rail's bandwidth is not what limits
// the put, and the extra work requests and the closing write would only add latency.
constexpr uint64_t kStripeMinBytes = 256u << 10;
constexpr uint64_t kStripeAlign = 4096;
constexpr uint64_t kReceiveBit = 1ull << 63;
// A send's work request id: a sequence number above the index of its InFlight slot, so that a
// completion for a slot released since (its peer went down) is recognised as stale.
constexpr int kSlotBits = 24;
constexpr uint64_t kSlotMask = (1ull << kSlotBits) - 1;
// RDMA says nothing when a peer process dies; a send to it fails after the retries. While the
// progress engine is polling (some group is busy) every rail to every peer carries at least
// one send this often, so a group waiting on a dead peer learns of it in a few seconds.
constexpr auto kKeepaliveInterval = std::chrono::milliseconds(500);

uint64_t ReceiveId(uint32_t serial, uint32_t slot) { return kReceiveBit | uint64_t{serial} << 20 | slot; }

TransportEvent Event(TransportEvent::Kind kind, PeerId peer) {
  TransportEvent e;
  e.kind = kind;
  e.peer = peer;
  return e;
}

// Copies bytes [from, from + len) of the concatenated pieces to dst.
void Gather(const LocalPiece* pieces, size_t count, uint64_t from, uint64_t len, uint8_t* dst) {
  for (size_t i = 0; i < count; ++i) {
    const LocalPiece& p = pieces[i];
    if (len == 0) return;
    if (from >= p.bytes) {
      from -= p.bytes;
      continue;
    }
    const uint64_t n = std::min(len, p.bytes - from);
    std::memcpy(dst, static_cast<const uint8_t*>(p.base) + from, n);
    dst += n;
    len -= n;
    from = 0;
  }
}

// Why rail `rail` of this node cannot be used with node `peer`: its queue pair there would not
// connect, or the peer, alive on other rails, never acknowledged a send on it. Rails pair by
// position, so this is nearly always rails listed in different orders or cabled to another
// network, which only the admin can fix: said so, with both ends named.
std::string RailUnreachable(size_t rail, const QpEndpoint& local, const QpEndpoint& remote, const std::string& peer,
                            const std::string& why) {
  return "rail " + std::to_string(rail) + " (" + local.rail + ", GID " + GidText(local.gid) + ") cannot reach rail " +
         std::to_string(rail) + " of node " + peer + " (" + remote.rail + ", GID " + GidText(remote.gid) + "): " + why +
         ". Rails pair by position: rail i of every node must be on the network of rail i of every other node "
         "(list the same HCAs in the same order in hca on every node)";
}

// Bytes [from, from + len) of the concatenated pieces as scatter/gather entries under `lkey`.
void RangeSges(const LocalPiece* pieces, size_t count, uint64_t from, uint64_t len, uint32_t lkey,
               std::vector<ibv_sge>* out) {
  out->clear();
  for (size_t i = 0; i < count && len > 0; ++i) {
    const LocalPiece& p = pieces[i];
    if (from >= p.bytes) {
      from -= p.bytes;
      continue;
    }
    const uint64_t n = std::min(len, p.bytes - from);
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uintptr_t>(static_cast<const uint8_t*>(p.base) + from);
    sge.length = static_cast<uint32_t>(n);
    sge.lkey = lkey;
    out->push_back(sge);
    len -= n;
    from = 0;
  }
}

}  // namespace

struct VerbsTransport::Connection {
  size_t rail = 0;
  uint32_t serial = 0;
  std::unique_ptr<QueuePair> qp;
  uint8_t* recv_base = nullptr;
  ibv_mr* recv_mr = nullptr;
  uint32_t send_free = kSendDepth;
  bool reached = false;  // a send on it completed: the peer's rail of the same index answers

  ~Connection() {
    qp.reset();  // the queue pair first: then the HCA no longer touches the ring
    if (recv_mr != nullptr) ibv_dereg_mr(recv_mr);
    if (recv_base != nullptr) munmap(recv_base, size_t{kRecvSlots} * kSlotBytes);
  }
};

// Work waiting for a connection or for room to post it.
struct VerbsTransport::Op {
  enum class Kind { kPut, kSend };
  Kind kind = Kind::kSend;
  // kPut
  std::vector<LocalPiece> pieces;  // copied from the caller's once the put has to wait
  uint64_t key = 0;
  uint64_t offset = 0;
  uint64_t total = 0;
  uint32_t imm = 0;
  uint64_t cookie = 0;
  bool started = false;
  bool bounce = false;
  uint64_t sent = 0;
  // A striped put: its stripes are out on every rail and it stays first in its peer's line
  // until all are acknowledged, then closes with a zero-byte write carrying the immediate.
  bool striped = false;
  uint32_t stripes_left = 0;  // work requests of the stripes not completed yet
  uint64_t close_addr = 0;    // where the closing write points (a valid address of the region)
  uint32_t close_rkey = 0;
  // kSend
  uint32_t type = VerbsWireHeader::kMessage;
  std::string payload;
  int rail = -1;  // -1: the put picks one; sends default to rail 0
};

struct VerbsTransport::InFlight {
  uint64_t wr_id = 0;  // 0: the slot is free
  PeerId peer = 0;
  uint64_t generation = 0;
  size_t rail = 0;
  int slot = -1;         // send pool slot to return
  bool put_last = false;  // completes a put: report kPutDone
  bool stripe = false;    // one stripe of the striped put first in its peer's line
  uint64_t cookie = 0;
  uint64_t bytes = 0;
};

Result<std::unique_ptr<VerbsTransport>> VerbsTransport::Start(const std::string& self,
                                                              std::vector<std::unique_ptr<Rail>> rails,
                                                              Options options) {
  if (rails.empty()) return Status(Code::kInvalidArgument, "the verbs transport needs at least one rail");
  std::unique_ptr<VerbsTransport> t(new VerbsTransport());
  t->self_ = self;
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
    SendPool pool;
    pool.base = static_cast<uint8_t*>(r->AllocateNear(size_t{kSendSlots} * kSlotBytes));
    if (pool.base == nullptr) return SystemError("allocating bounce buffers", errno);
    pool.mr = ibv_reg_mr(r->pd(), pool.base, size_t{kSendSlots} * kSlotBytes, IBV_ACCESS_LOCAL_WRITE);
    if (pool.mr == nullptr) {
      munmap(pool.base, size_t{kSendSlots} * kSlotBytes);
      return SystemError("registering bounce buffers on " + r->name(), errno);
    }
    for (uint32_t s = 0; s < kSendSlots; ++s) pool.free.push_back(kSendSlots - 1 - s);
    t->pools_.push_back(std::move(pool));
  }
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
  peers_.clear();
  for (auto& [key, r] : regions_) {
    for (ibv_mr* mr : r.mrs) ibv_dereg_mr(mr);
  }
  for (size_t i = 0; i < pools_.size(); ++i) {
    ibv_dereg_mr(pools_[i].mr);
    munmap(pools_[i].base, size_t{kSendSlots} * kSlotBytes);
  }
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

void VerbsTransport::set_dialer(Dialer dialer) {
  std::lock_guard<std::mutex> lock(mu_);
  dialer_ = std::move(dialer);
}

std::string VerbsTransport::address() const {
  std::string out;
  for (const auto& r : rails_) out += (out.empty() ? "" : ",") + r->name();
  return out;
}

// --- connections ---

Result<std::unique_ptr<VerbsTransport::Connection>> VerbsTransport::MakeConnection(size_t rail) {
  const Rail& r = *rails_[rail];
  auto c = std::make_unique<Connection>();
  c->rail = rail;
  c->serial = next_serial_.fetch_add(1);
  auto qp = QueuePair::Create(r, kSendDepth, kRecvSlots, kMaxGather);
  if (!qp.ok()) return qp.status();
  c->qp = std::move(qp.value());
  const size_t ring = size_t{kRecvSlots} * kSlotBytes;
  c->recv_base = static_cast<uint8_t*>(r.AllocateNear(ring));
  if (c->recv_base == nullptr) return SystemError("allocating a receive ring", errno);
  c->recv_mr = ibv_reg_mr(r.pd(), c->recv_base, ring, IBV_ACCESS_LOCAL_WRITE);
  if (c->recv_mr == nullptr) return SystemError("registering a receive ring on " + r.name(), errno);
  for (uint32_t s = 0; s < kRecvSlots; ++s) RepostReceive(c.get(), s);
  return c;
}

void VerbsTransport::RepostReceive(Connection* c, uint32_t slot) {
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(c->recv_base + size_t{slot} * kSlotBytes);
  sge.length = kSlotBytes;
  sge.lkey = c->recv_mr->lkey;
  ibv_recv_wr wr{};
  wr.wr_id = ReceiveId(c->serial, slot);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (int e = ibv_post_recv(c->qp->qp(), &wr, &bad); e != 0) {
    spdlog::warn("verbs: cannot post a receive on {}: {}", c->qp->local().rail, std::strerror(e));
  }
}

VerbsTransport::PeerState& VerbsTransport::Peer(PeerId peer) {
  if (peer >= peers_.size()) peers_.resize(size_t{peer} + 1);
  return peers_[peer];
}

void VerbsTransport::Adopt(PeerState& p, std::vector<std::unique_ptr<Connection>> conns, PeerId peer,
                           uint64_t incarnation, uint64_t dial_floor) {
  p.conns = std::move(conns);
  p.put_rails.clear();  // chosen among the rails of the connections replaced
  p.incarnation = incarnation;
  p.dial_floor = dial_floor;
  p.state = PeerState::State::kConnected;
  for (size_t r = 0; r < p.conns.size(); ++r) receivers_[p.conns[r]->serial] = {peer, r};
  std::string rails;
  for (const auto& c : p.conns) rails += (rails.empty() ? "" : ", ") + c->qp->local().rail;
  spdlog::info("verbs: connected to node {} ({} queue pair(s): {})", directory_.Name(peer), p.conns.size(), rails);
  if (p.conns.size() < rails_.size()) {
    spdlog::warn("verbs: node {} has fewer rails than this node's {}: only the first {} are used with it",
                 directory_.Name(peer), rails_.size(), p.conns.size());
  }
  // A first send on every rail at once, so that a rail that does not reach the peer's rail of
  // the same index shows now, by name, and not when a collective first uses it.
  for (size_t r = 0; r < p.conns.size(); ++r) {
    EnqueueControl(peer, VerbsWireHeader::kKeepalive, 0, "", static_cast<int>(r));
  }
  for (const auto& [key, r] : regions_) {
    if (r.state == LocalRegion::State::kRegistered) Announce(peer, key, r);
  }
  Flush(peer);
}

Status VerbsTransport::Connect(PeerId id, const std::string&) {
  const std::string peer = directory_.Name(id);
  Dialer dialer;
  uint64_t generation = 0;
  DialOffer offer;
  offer.incarnation = incarnation_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    PeerState& p = Peer(id);
    if (p.state != PeerState::State::kIdle) return Status::Ok();
    if (!dialer_) return Status(Code::kInvalidArgument, "verbs transport: no way to reach peers set");
    p.state = PeerState::State::kDialing;
    generation = ++p.generation;
    offer.dial_seq = ++dials_started_;
    dialer = dialer_;
  }
  // Queue pairs are made and the peer called without the lock: the peer may be dialling us
  // at the same moment, and its call into Accept here must not wait for ours.
  std::vector<std::unique_ptr<Connection>> conns;
  Status made = Status::Ok();
  for (size_t r = 0; r < rails_.size() && made.ok(); ++r) {
    auto c = MakeConnection(r);
    if (!c.ok()) {
      made = c.status();
      break;
    }
    offer.endpoints.push_back(c.value()->qp->local());
    conns.push_back(std::move(c.value()));
  }
  Result<DialAnswer> theirs = made.ok() ? dialer(peer, offer) : Result<DialAnswer>(made);
  if (theirs.ok() && theirs->endpoints.empty()) {
    theirs = Status(Code::kProtocol, "node " + peer + " offered no queue pairs");
  }
  if (theirs.ok() && StillCurrent(id, generation, PeerState::State::kDialing)) {
    // RTR and RTS without the lock too: RTR may wait for the peer's address (seconds, with
    // retries), and every put of every group takes the lock. The queue pairs are this call's
    // alone until Adopt; the generation, checked again below, tells whether the peer's own dial
    // was accepted meanwhile.
    conns.resize(std::min(conns.size(), theirs->endpoints.size()));  // rails both ends have
    Status s = ConnectRails(conns, theirs->endpoints, peer);
    if (!s.ok()) theirs = s;
  }
  std::lock_guard<std::mutex> lock(mu_);
  PeerState& p = Peer(id);
  if (p.generation != generation || p.state != PeerState::State::kDialing) {
    return Status::Ok();  // the peer's own dial got here first and was accepted; ours go
  }
  if (!theirs.ok()) {
    p.state = PeerState::State::kIdle;
    spdlog::warn("verbs: cannot connect to node {}: {}", peer, theirs.status().message());
    // Not a dial that crossed the peer's own (refused): the queue pairs cannot be made or
    // connected, here or there, and waiting will not change that (RTR was already tried again
    // while the peer's address might only be unresolved yet). The groups that need this peer
    // fail now, with the reason, instead of at their timeout.
    if (theirs.status().code() == Code::kSystem) {
      TransportEvent e = Event(TransportEvent::Kind::kPeerDown, id);
      e.reason = theirs.status().message();
      e.never_up = true;
      Emit(std::move(e));
    }
    return theirs.status();
  }
  Adopt(p, std::move(conns), id, theirs->incarnation, theirs->dials_started);
  return Status::Ok();
}

Result<DialAnswer> VerbsTransport::Accept(const std::string& peer, const DialOffer& offer) {
  const std::vector<QpEndpoint>& remote = offer.endpoints;
  if (remote.empty()) return Status(Code::kProtocol, "no queue pair endpoints offered");
  if (peer == self_) return Status(Code::kRefused, "node " + self_ + " cannot connect to itself");
  const PeerId id = directory_.For(peer);
  uint64_t generation = 0;
  DialAnswer answer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    PeerState& p = Peer(id);
    if (p.state == PeerState::State::kDialing && self_ < peer) {
      return Status(Code::kRefused, "node " + self_ + " is dialling node " + peer + " itself");
    }
    if (p.state == PeerState::State::kConnected && offer.incarnation == p.incarnation &&
        offer.dial_seq <= p.dial_floor) {
      return Status(Code::kRefused, "node " + self_ + " is already connected to node " + peer +
                                        " by a dial that crossed this one");
    }
    if (p.state == PeerState::State::kAccepting && offer.incarnation == p.incarnation &&
        offer.dial_seq <= p.dial_floor) {
      return Status(Code::kRefused, "node " + self_ + " is already accepting a newer dial from node " + peer);
    }
    if (p.state == PeerState::State::kConnected) {
      // A newer dial: its daemon restarted, or it lost its queue pairs.
      PeerDown(id, "node " + peer + " connected anew (its daemon restarted or lost its queue pairs)");
    }
    // kAccepting keeps our own Connect from dialling meanwhile. An earlier dial of the peer's
    // still being accepted (kAccepting already) is given up on: the peer has (its call's
    // deadline passed, or its daemon restarted), and this one replaces it.
    p.state = PeerState::State::kAccepting;
    p.incarnation = offer.incarnation;  // as Adopt will: a late copy of an older dial is refused above
    p.dial_floor = offer.dial_seq;
    generation = ++p.generation;
    answer.incarnation = incarnation_;
    answer.dials_started = dials_started_;
  }
  // Made and connected without the lock, as in Connect: registering the receive rings and RTR,
  // which may wait for the peer's address, must not hold up every group's puts.
  std::vector<std::unique_ptr<Connection>> conns;
  Status made = Status::Ok();
  for (size_t r = 0; r < std::min(rails_.size(), remote.size()) && made.ok(); ++r) {
    auto c = MakeConnection(r);
    if (!c.ok()) {
      made = c.status();
      break;
    }
    conns.push_back(std::move(c.value()));
  }
  if (made.ok()) made = ConnectRails(conns, remote, peer);
  std::lock_guard<std::mutex> lock(mu_);
  PeerState& p = Peer(id);
  if (p.generation != generation) {
    return Status(Code::kRefused, "node " + self_ + " took a newer dial from node " + peer + " instead of this one");
  }
  if (!made.ok()) {
    p.state = PeerState::State::kIdle;
    spdlog::warn("verbs: cannot accept node {}: {}", peer, made.message());
    TransportEvent e = Event(TransportEvent::Kind::kPeerDown, id);  // as in Connect
    e.reason = made.message();
    e.never_up = true;
    Emit(std::move(e));
    return Status(Code::kSystem, made.message());
  }
  for (const auto& c : conns) answer.endpoints.push_back(c->qp->local());
  Adopt(p, std::move(conns), id, offer.incarnation, offer.dial_seq);
  return answer;
}

bool VerbsTransport::StillCurrent(PeerId id, uint64_t generation, PeerState::State state) {
  std::lock_guard<std::mutex> lock(mu_);
  const PeerState& p = Peer(id);
  return p.generation == generation && p.state == state;
}

Status VerbsTransport::ConnectRails(const std::vector<std::unique_ptr<Connection>>& conns,
                                    const std::vector<QpEndpoint>& remote, const std::string& peer) {
  // One budget for every rail: the dialler waits for the answer (QueuePairDialer) and must hear
  // it, success or not, within its own deadline.
  const auto deadline = std::chrono::steady_clock::now() + kRtrRetryBudget;
  for (size_t r = 0; r < conns.size() && r < remote.size(); ++r) {
    QueuePair& qp = *conns[r]->qp;
    Status s = qp.ConnectTo(remote[r], deadline, [&](int attempt, int err, std::chrono::milliseconds pause) {
      rtr_retries_.fetch_add(1, std::memory_order_relaxed);
      spdlog::warn("verbs: queue pair on {} to node {} ({}, GID {}) not ready to receive, attempt {}: {}; "
                   "trying again in {} ms (the peer's address may not be resolved yet)",
                   qp.local().rail, peer, remote[r].rail, GidText(remote[r].gid), attempt, std::strerror(err),
                   pause.count());
    });
    if (!s.ok()) return Status(Code::kSystem, RailUnreachable(r, qp.local(), remote[r], peer, s.message()));
  }
  return Status::Ok();
}

std::string VerbsTransport::SendFailure(const PeerState& p, const std::string& peer_name, size_t rail,
                                        ibv_wc_status status) const {
  const std::string what = ibv_wc_status_str(status);
  std::string answering;
  for (const auto& c : p.conns) {
    if (c->reached && c->rail != rail) answering += (answering.empty() ? "" : ", ") + c->qp->local().rail;
  }
  if (answering.empty() || p.conns.size() <= rail) {
    return "send on " + rails_[rail]->name() + ": " + what + " (peer gone or unreachable)";
  }
  // The peer answers on other rails, so it is alive: this rail is what does not reach.
  const QueuePair& qp = *p.conns[rail]->qp;
  return RailUnreachable(rail, qp.local(), qp.remote(), peer_name, what + " while " + answering + " reach it");
}

void VerbsTransport::PeerDown(PeerId peer, const std::string& reason, bool never_up) {
  PeerState& p = Peer(peer);
  if (p.state != PeerState::State::kConnected) return;
  spdlog::warn("verbs: lost node {}: {}", directory_.Name(peer), reason);
  for (auto& c : p.conns) receivers_.erase(c->serial);
  p.conns.clear();
  p.regions.clear();
  p.put_rails.clear();
  p.pending.clear();  // puts among them are given up on by the exchange at kPeerDown
  p.dropping = false;
  p.state = PeerState::State::kIdle;
  ++p.generation;
  for (uint32_t i = 0; i < in_flight_.size(); ++i) {
    const InFlight& f = in_flight_[i];
    if (f.wr_id == 0 || f.peer != peer) continue;
    if (f.slot >= 0) pools_[f.rail].free.push_back(static_cast<uint32_t>(f.slot));
    Release(i);
  }
  std::vector<uint64_t> closed;
  for (auto& [key, r] : regions_) {
    if (r.state != LocalRegion::State::kClosing) continue;
    for (auto it = r.acks_waiting.begin(); it != r.acks_waiting.end();) {
      it = it->first == peer ? r.acks_waiting.erase(it) : std::next(it);
    }
    if (r.acks_waiting.empty() && !r.mrs.empty()) closed.push_back(key);
  }
  for (uint64_t key : closed) FinishClosing(key);
  TransportEvent e = Event(TransportEvent::Kind::kPeerDown, peer);
  e.reason = reason;
  e.never_up = never_up;
  Emit(std::move(e));
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

TransportStats VerbsTransport::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  TransportStats s = stats_;
  s.rtr_retries = rtr_retries_.load(std::memory_order_relaxed);
  s.queue_pairs = 0;
  s.registrations_pending = 0;
  for (const PeerState& p : peers_) {
    if (p.state == PeerState::State::kConnected) s.queue_pairs += static_cast<uint32_t>(p.conns.size());
  }
  for (const auto& [key, r] : regions_) s.registrations_pending += r.state == LocalRegion::State::kPending;
  return s;
}

// --- memory ---

Result<uint64_t> VerbsTransport::RegisterRegion(void* base, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t key = next_key_++;
  LocalRegion& r = regions_[key];
  r.base = static_cast<uint8_t*>(base);
  r.bytes = bytes;
  registrar_->Register(key, base, bytes);
  return key;
}

void VerbsTransport::OnRegistered(uint64_t key, std::vector<ibv_mr*> mrs, Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.find(key);
  if (it == regions_.end() || it->second.state == LocalRegion::State::kClosing) {
    registrar_->Deregister(std::move(mrs));  // the group closed while it was being registered
    if (it != regions_.end()) regions_.erase(it);
    return;
  }
  LocalRegion& r = it->second;
  if (!status.ok()) {
    // The group still works, through bounce buffers only.
    spdlog::warn("verbs: region {} ({} bytes) stays unregistered: {}", key, r.bytes, status.message());
    r.registration_failed = true;
    return;
  }
  r.mrs = std::move(mrs);
  r.state = LocalRegion::State::kRegistered;
  registered_by_base_[r.base] = key;
  ++stats_.registrations;
  stats_.registered_bytes += r.bytes;
  for (PeerId id = 0; id < peers_.size(); ++id) {
    if (peers_[id].state == PeerState::State::kConnected) Announce(id, key, r);
  }
  Wake();  // puts waiting for the region may go direct now
}

void VerbsTransport::Announce(PeerId peer, uint64_t key, const LocalRegion& r) {
  RegionAnnouncement a;
  a.addr = reinterpret_cast<uintptr_t>(r.base);
  a.bytes = r.bytes;
  for (const auto& mr : r.mrs) a.rkeys.push_back(mr->rkey);
  EnqueueControl(peer, VerbsWireHeader::kRegion, key, a.Encode(), 0);
}

void VerbsTransport::DeregisterRegion(uint64_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.find(key);
  if (it == regions_.end()) return;
  LocalRegion& r = it->second;
  r.keep_registration = false;
  if (r.state == LocalRegion::State::kParked) {
    FinishClosing(key);
  } else if (r.state != LocalRegion::State::kClosing) {  // closing: FinishClosing frees it
    Close(it, false);
  }
}

bool VerbsTransport::ParkRegion(uint64_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.find(key);
  if (it == regions_.end()) return false;
  const bool registered = it->second.state == LocalRegion::State::kRegistered;
  Close(it, registered);
  return registered;
}

std::optional<uint64_t> VerbsTransport::ReuseRegion(uint64_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.find(key);
  if (it == regions_.end() || it->second.state != LocalRegion::State::kParked) return std::nullopt;
  const uint64_t fresh = next_key_++;
  LocalRegion& r = regions_[fresh] = std::move(it->second);
  regions_.erase(it);
  r.state = LocalRegion::State::kRegistered;
  r.keep_registration = false;
  r.rail_tiers.clear();  // the next group's own, once it is placed
  registered_by_base_[r.base] = fresh;
  for (PeerId id = 0; id < peers_.size(); ++id) {
    if (peers_[id].state == PeerState::State::kConnected) Announce(id, fresh, r);
  }
  Wake();  // puts waiting for the region may go direct now
  return fresh;
}

void VerbsTransport::Close(std::map<uint64_t, LocalRegion>::iterator it, bool keep) {
  const uint64_t key = it->first;
  LocalRegion& r = it->second;
  const bool registered = r.state == LocalRegion::State::kRegistered;
  r.state = LocalRegion::State::kClosing;  // incoming bounce data for it is dropped from now on
  r.keep_registration = keep;
  if (r.registration_failed) {
    regions_.erase(it);
    return;
  }
  if (!registered) return;  // OnRegistered finishes it
  registered_by_base_.erase(r.base);
  // Peers may still write into it: tell them, and free (or park) it once every rail has said
  // that nothing more is on its way.
  for (PeerId id = 0; id < peers_.size(); ++id) {
    const PeerState& p = peers_[id];
    if (p.state != PeerState::State::kConnected) continue;
    for (size_t rail = 0; rail < p.conns.size(); ++rail) r.acks_waiting.insert({id, rail});
    EnqueueControl(id, VerbsWireHeader::kRegionGone, key, "", 0);
  }
  if (r.acks_waiting.empty()) FinishClosing(key);
}

void VerbsTransport::FinishClosing(uint64_t key) {
  auto it = regions_.find(key);
  if (it == regions_.end()) return;
  if (it->second.keep_registration) {
    it->second.state = LocalRegion::State::kParked;
    return;
  }
  ++stats_.deregistrations;
  stats_.registered_bytes -= it->second.bytes;
  registrar_->Deregister(std::move(it->second.mrs));
  regions_.erase(it);
}

const VerbsTransport::LocalRegion* VerbsTransport::FindRegistered(const LocalPiece* pieces, size_t count) const {
  if (count == 0) return nullptr;
  auto* first = static_cast<uint8_t*>(const_cast<void*>(pieces[0].base));
  auto it = registered_by_base_.upper_bound(first);
  if (it == registered_by_base_.begin()) return nullptr;
  const LocalRegion& r = regions_.at(std::prev(it)->second);
  for (size_t i = 0; i < count; ++i) {
    const LocalPiece& p = pieces[i];
    const auto* b = static_cast<const uint8_t*>(p.base);
    if (b < r.base || b + p.bytes > r.base + r.bytes) return nullptr;
  }
  return &r;
}

size_t VerbsTransport::PutRail(PeerState& p, uint64_t key, const LocalPiece* pieces, size_t count) {
  // One rail per remote region (a group's segment there): a group's puts to a peer land in the
  // order they were posted, which eager rounds rely on (a slot's round k put must not overtake
  // its round k-2 put), so the rail is chosen once and kept for the region's life. Chosen at
  // the first put, not at registration: a group registers its segment when its first rank
  // joins, but its rail tiers come with its segment placement, once every local rank has
  // joined (GroupRegistry), which its first put cannot precede (a round needs every local
  // rank's data). Groups with no tiers (no placement, or all rails equally near) spread over
  // the rails by key.
  auto [it, first] = p.put_rails.try_emplace(key, 0);
  if (!first) return it->second;
  const LocalRegion* local = nullptr;
  if (count > 0) {
    const auto* at = static_cast<const uint8_t*>(pieces[0].base);
    for (const auto& [k, r] : regions_) {
      if (at >= r.base && at < r.base + r.bytes) local = &r;
    }
  }
  it->second = ChooseRail(local != nullptr ? local->rail_tiers : RailTiers{}, p.conns.size(), key);
  return it->second;
}

void VerbsTransport::PreferRails(uint64_t key, RailTiers tiers) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.find(key);
  if (it != regions_.end()) it->second.rail_tiers = std::move(tiers);
}

// --- sending ---

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
  PeerState& p = Peer(peer);
  // Posted from the caller's list at once when nothing waits before it; copied only to wait.
  if (p.state == PeerState::State::kConnected && p.pending.empty()) {
    if (PostPut(peer, p, op, pieces, count)) return Status::Ok();
    if (p.state != PeerState::State::kConnected) return Status::Ok();  // lost with the peer, reported by kPeerDown
  }
  op.pieces.assign(pieces, pieces + count);
  p.pending.push_back(std::move(op));
  return Status::Ok();
}

Status VerbsTransport::Send(PeerId peer, const void* message, size_t bytes) {
  if (bytes > kMaxTransportMessage) return Status(Code::kInvalidArgument, "transport message too large");
  std::lock_guard<std::mutex> lock(mu_);
  PeerState& p = Peer(peer);
  if (p.state == PeerState::State::kConnected && p.pending.empty()) {
    if (PostControl(peer, p, VerbsWireHeader::kMessage, 0, message, bytes, 0)) return Status::Ok();
    if (p.state != PeerState::State::kConnected) return Status::Ok();
  }
  EnqueueControl(peer, VerbsWireHeader::kMessage, 0, std::string(static_cast<const char*>(message), bytes), 0);
  return Status::Ok();
}

void VerbsTransport::EnqueueControl(PeerId peer, uint32_t type, uint64_t key, std::string payload, int rail) {
  Op op;
  op.kind = Op::Kind::kSend;
  op.type = type;
  op.key = key;
  op.payload = std::move(payload);
  op.rail = rail;
  Peer(peer).pending.push_back(std::move(op));
  Flush(peer);
}

void VerbsTransport::Flush(PeerId peer) {
  PeerState& p = Peer(peer);
  if (p.state != PeerState::State::kConnected) return;
  // In order: a peer's messages and puts may depend on each other (a credit after the data).
  while (!p.pending.empty()) {
    if (!PostOp(peer, p, p.pending.front())) return;
    if (p.state != PeerState::State::kConnected) return;  // posting failed and dropped the peer
    p.pending.pop_front();
  }
}

uint64_t VerbsTransport::Track(InFlight f) {
  uint32_t index;
  if (in_flight_free_.empty()) {
    index = static_cast<uint32_t>(in_flight_.size());
    in_flight_.emplace_back();
  } else {
    index = in_flight_free_.back();
    in_flight_free_.pop_back();
  }
  f.wr_id = next_wr_++ << kSlotBits | index;
  in_flight_[index] = std::move(f);
  return in_flight_[index].wr_id;
}

void VerbsTransport::Release(uint32_t index) {
  in_flight_[index].wr_id = 0;
  in_flight_free_.push_back(index);
}

bool VerbsTransport::PostSend(PeerId peer, PeerState& p, size_t rail, const VerbsWireHeader& h,
                              const LocalPiece* pieces, size_t count, uint64_t from, uint64_t n, InFlight f) {
  Connection& c = *p.conns[rail];
  SendPool& pool = pools_[rail];
  if (c.send_free == 0 || pool.free.empty()) return false;
  const uint32_t slot = pool.free.back();
  pool.free.pop_back();
  uint8_t* at = pool.base + size_t{slot} * kSlotBytes;
  h.Encode(at);
  Gather(pieces, count, from, n, at + VerbsWireHeader::kBytes);
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(at);
  sge.length = static_cast<uint32_t>(VerbsWireHeader::kBytes + n);
  sge.lkey = pool.mr->lkey;
  f.peer = peer;
  f.generation = p.generation;
  f.rail = rail;
  f.slot = static_cast<int>(slot);
  ibv_send_wr wr{};
  wr.wr_id = Track(f);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  if (int e = ibv_post_send(c.qp->qp(), &wr, &bad); e != 0) {
    PeerDown(peer, std::string("posting a send failed: ") + std::strerror(e));  // returns the slot too
    return false;
  }
  --c.send_free;
  return true;
}

bool VerbsTransport::PostOp(PeerId peer, PeerState& p, Op& op) {
  if (op.kind == Op::Kind::kSend) {
    return PostControl(peer, p, op.type, op.key, op.payload.data(), op.payload.size(), op.rail);
  }
  return PostPut(peer, p, op, op.pieces.data(), op.pieces.size());
}

bool VerbsTransport::PostControl(PeerId peer, PeerState& p, uint32_t type, uint64_t key, const void* payload,
                                 size_t bytes, int rail) {
  const size_t on = rail >= 0 && static_cast<size_t>(rail) < p.conns.size() ? rail : 0;
  VerbsWireHeader h;
  h.type = type;
  h.key = key;
  h.last = true;
  const LocalPiece piece{payload, bytes};
  if (!PostSend(peer, p, on, h, &piece, 1, 0, bytes, InFlight{})) return false;
  if (type == VerbsWireHeader::kMessage) ++stats_.control_frames_sent;
  return true;
}

bool VerbsTransport::PostPut(PeerId peer, PeerState& p, Op& op, const LocalPiece* pieces, size_t count) {
  const LocalRegion* local = nullptr;
  const RemoteRegion* remote = nullptr;
  if (!op.started) {
    op.rail = static_cast<int>(PutRail(p, op.key, pieces, count));
    local = FindRegistered(pieces, count);
    auto it = p.regions.find(op.key);
    if (it != p.regions.end() && op.offset + op.total <= it->second.bytes) remote = &it->second;
    op.bounce = local == nullptr || remote == nullptr;
  }
  if (!op.bounce && (op.striped || (p.conns.size() > 1 && op.total >= kStripeMinBytes))) {
    return PostStriped(peer, p, op, local, remote, pieces, count);
  }
  const size_t rail = static_cast<size_t>(op.rail);
  Connection& c = *p.conns[rail];
  if (!op.bounce) {
    // Straight from our segment into theirs: one work request per max_sge pieces, the last
    // one carrying the immediate, so it lands after the rest (RC keeps them in order).
    RangeSges(pieces, count, 0, op.total, local->mrs[rail]->lkey, &sges_);
    if (c.send_free < WritesFor(c)) {
      op.started = false;  // decide again when there is room: a region may change meanwhile
      return false;
    }
    op.started = true;
    InFlight f;
    f.peer = peer;
    f.generation = p.generation;
    f.rail = rail;
    f.cookie = op.cookie;
    f.bytes = op.total;
    if (!PostWrites(peer, c, remote->addr + op.offset, remote->rkeys[rail], f, op.imm)) return false;
    ++stats_.direct_puts;
    ++stats_.data_frames_sent;
    stats_.rail_put_bytes[rail] += op.total;
    return true;
  }
  if (!op.started) {
    op.started = true;
    ++stats_.bounce_puts;
    ++stats_.data_frames_sent;
  }
  // Through bounce slots, as many fragments as there are slots now; the rest on a later pass.
  do {
    const uint64_t n = std::min<uint64_t>(kPayloadBytes, op.total - op.sent);
    VerbsWireHeader h;
    h.type = VerbsWireHeader::kBouncePut;
    h.imm = op.imm;
    h.key = op.key;
    h.offset = op.offset + op.sent;
    h.total = op.total;
    h.last = op.sent + n == op.total;
    InFlight f;
    f.put_last = h.last;
    f.cookie = op.cookie;
    f.bytes = op.total;
    if (!PostSend(peer, p, rail, h, pieces, count, op.sent, n, f)) return false;
    stats_.bounce_bytes += n;
    stats_.rail_put_bytes[rail] += n;
    op.sent += n;
  } while (op.sent < op.total);
  return true;
}

size_t VerbsTransport::WritesFor(const Connection& c) const {
  const uint32_t per_wr = c.qp->max_sge();
  return std::max<size_t>(1, (sges_.size() + per_wr - 1) / per_wr);
}

bool VerbsTransport::PostWrites(PeerId peer, Connection& c, uint64_t remote_at, uint32_t rkey, InFlight each,
                                std::optional<uint32_t> imm) {
  const uint32_t per_wr = c.qp->max_sge();
  const size_t wrs = WritesFor(c);
  wrs_.assign(wrs, ibv_send_wr{});
  for (size_t w = 0; w < wrs; ++w) {
    const size_t first = w * per_wr;
    const size_t n = std::min<size_t>(per_wr, sges_.size() - std::min(first, sges_.size()));
    uint64_t bytes = 0;
    for (size_t i = first; i < first + n; ++i) bytes += sges_[i].length;
    const bool last = w + 1 == wrs;
    InFlight f = each;
    f.put_last = last && imm.has_value();
    ibv_send_wr& wr = wrs_[w];
    wr.wr_id = Track(f);
    wr.sg_list = n > 0 ? &sges_[first] : nullptr;
    wr.num_sge = static_cast<int>(n);
    wr.opcode = last && imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
    if (last && imm) wr.imm_data = htonl(*imm);
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote_at;
    wr.wr.rdma.rkey = rkey;
    wr.next = last ? nullptr : &wrs_[w + 1];
    remote_at += bytes;
  }
  ibv_send_wr* bad = nullptr;
  if (int e = ibv_post_send(c.qp->qp(), wrs_.data(), &bad); e != 0) {
    PeerDown(peer, std::string("posting an RDMA write failed: ") + std::strerror(e));
    return false;
  }
  c.send_free -= static_cast<uint32_t>(wrs);
  return true;
}

bool VerbsTransport::PostStriped(PeerId peer, PeerState& p, Op& op, const LocalRegion* local,
                                 const RemoteRegion* remote, const LocalPiece* pieces, size_t count) {
  if (op.striped) {
    if (op.stripes_left > 0) return false;
    // Every stripe is acknowledged, so it has been placed in the peer's memory (RC): the
    // immediate may tell the peer, on the put's own rail, so that the group's puts to this
    // peer still raise their immediates in the order they were posted.
    Connection& c = *p.conns[static_cast<size_t>(op.rail)];
    if (c.send_free == 0) return false;
    InFlight f;
    f.peer = peer;
    f.generation = p.generation;
    f.rail = c.rail;
    f.put_last = true;
    f.cookie = op.cookie;
    f.bytes = op.total;
    ibv_send_wr wr{};
    wr.wr_id = Track(f);
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = htonl(op.imm);
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = op.close_addr;
    wr.wr.rdma.rkey = op.close_rkey;
    ibv_send_wr* bad = nullptr;
    if (int e = ibv_post_send(c.qp->qp(), &wr, &bad); e != 0) {
      PeerDown(peer, std::string("posting an RDMA write failed: ") + std::strerror(e));
      return false;
    }
    --c.send_free;
    return true;
  }
  // Rail r writes bytes [r * share, (r + 1) * share): the stripes go out together or not at all.
  const size_t rails = p.conns.size();
  const uint64_t share = ((op.total + rails - 1) / rails + kStripeAlign - 1) / kStripeAlign * kStripeAlign;
  std::vector<size_t> wrs_per_rail(rails, 0);
  for (size_t r = 0; r < rails && r * share < op.total; ++r) {
    const uint64_t len = std::min(share, op.total - r * share);
    RangeSges(pieces, count, r * share, len, local->mrs[r]->lkey, &sges_);
    wrs_per_rail[r] = WritesFor(*p.conns[r]);
    if (p.conns[r]->send_free < wrs_per_rail[r]) {
      op.started = false;  // decide again when there is room
      return false;
    }
  }
  op.started = true;
  op.striped = true;
  op.close_addr = remote->addr + op.offset;
  op.close_rkey = remote->rkeys[static_cast<size_t>(op.rail)];
  for (size_t r = 0; r < rails && r * share < op.total; ++r) {
    Connection& c = *p.conns[r];
    const uint64_t len = std::min(share, op.total - r * share);
    RangeSges(pieces, count, r * share, len, local->mrs[r]->lkey, &sges_);
    InFlight f;
    f.peer = peer;
    f.generation = p.generation;
    f.rail = r;
    f.stripe = true;
    if (!PostWrites(peer, c, remote->addr + op.offset + r * share, remote->rkeys[r], f, std::nullopt)) return false;
    op.stripes_left += static_cast<uint32_t>(wrs_per_rail[r]);
    stats_.rail_put_bytes[r] += len;
  }
  ++stats_.direct_puts;
  ++stats_.striped_puts;
  ++stats_.data_frames_sent;
  return false;  // first in line until the stripes are acknowledged (OnCompletion)
}

// --- completions ---

void VerbsTransport::Wake() {
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  woken_.store(true, std::memory_order_release);
}

void VerbsTransport::Emit(TransportEvent e) {
  events_.push_back(std::move(e));
  if (!polling_) Wake();
}

int VerbsTransport::PollCompletions() {
  int handled = 0;
  for (const auto& r : rails_) {
    ibv_wc wc[32];
    int n;
    do {
      n = ibv_poll_cq(r->cq(), 32, wc);
      for (int i = 0; i < n; ++i) OnCompletion(wc[i]);
      handled += std::max(n, 0);
    } while (n == 32);
  }
  return handled;
}

void VerbsTransport::Poll(std::vector<TransportEvent>* out) {
  // Only when another thread said so: a spinning engine's pass makes no system call.
  if (woken_.exchange(false, std::memory_order_acquire)) {
    uint64_t drained;
    (void)!read(wake_fd_, &drained, sizeof(drained));
  }
  std::lock_guard<std::mutex> lock(mu_);
  polling_ = true;
  PollCompletions();
  const auto now = std::chrono::steady_clock::now();
  if (now - last_keepalive_ >= kKeepaliveInterval) {
    last_keepalive_ = now;
    for (PeerId id = 0; id < peers_.size(); ++id) {
      const PeerState& p = peers_[id];
      if (p.state != PeerState::State::kConnected || !p.pending.empty()) continue;
      for (size_t r = 0; r < p.conns.size(); ++r) {
        EnqueueControl(id, VerbsWireHeader::kKeepalive, 0, "", static_cast<int>(r));
      }
    }
  }
  for (PeerId id = 0; id < peers_.size(); ++id) {
    if (!peers_[id].pending.empty()) Flush(id);
  }
  polling_ = false;
  if (!events_.empty()) {
    out->insert(out->end(), std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
    events_.clear();
  }
}

bool VerbsTransport::PrepareToSleep() {
  // Drained here whatever the flag says: a wake-up written after the last pass means work.
  uint64_t drained = 0;
  const bool woken = read(wake_fd_, &drained, sizeof(drained)) > 0;
  std::lock_guard<std::mutex> lock(mu_);
  if (woken || !events_.empty()) return false;
  polling_ = true;
  for (const auto& r : rails_) {
    if (Status armed = r->ArmCompletions(); !armed.ok()) {
      // Without an armed queue the channel would never fire: stay awake rather than miss work.
      spdlog::warn("verbs: {}", armed.message());
      polling_ = false;
      return false;
    }
  }
  // What completed before the queues were armed raised no event: take it now, not after a sleep.
  const bool arrived = PollCompletions() > 0;
  polling_ = false;
  return !arrived && events_.empty();
}

void VerbsTransport::OnCompletion(const ibv_wc& wc) {
  if (wc.wr_id & kReceiveBit) {
    const auto serial = static_cast<uint32_t>((wc.wr_id & ~kReceiveBit) >> 20);
    const auto slot = static_cast<uint32_t>(wc.wr_id & 0xfffff);
    auto who = receivers_.find(serial);
    if (who == receivers_.end()) return;  // a connection dropped since
    const PeerId peer = who->second.first;
    const size_t rail = who->second.second;
    PeerState& p = Peer(peer);
    Connection* c = p.conns[rail].get();
    if (wc.status != IBV_WC_SUCCESS) {
      PeerDown(peer, std::string("receive on ") + c->qp->local().rail + ": " + ibv_wc_status_str(wc.status));
      return;
    }
    if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
      ++stats_.data_frames_received;
      TransportEvent e = Event(TransportEvent::Kind::kArrived, peer);
      e.imm = ntohl(wc.imm_data);
      e.bytes = wc.byte_len;
      Emit(std::move(e));
    } else {
      OnReceive(peer, p, rail, c->recv_base + size_t{slot} * kSlotBytes, wc.byte_len);
    }
    if (p.state == PeerState::State::kConnected && p.conns.size() > rail && p.conns[rail].get() == c) {
      RepostReceive(c, slot);
    }
    return;
  }
  const auto index = static_cast<uint32_t>(wc.wr_id & kSlotMask);
  if (index >= in_flight_.size() || in_flight_[index].wr_id != wc.wr_id) return;  // its peer went down since
  const InFlight f = in_flight_[index];
  Release(index);
  if (f.slot >= 0) pools_[f.rail].free.push_back(static_cast<uint32_t>(f.slot));
  PeerState& p = Peer(f.peer);
  if (p.generation != f.generation) return;
  if (p.conns.size() > f.rail) ++p.conns[f.rail]->send_free;
  if (wc.status != IBV_WC_SUCCESS) {
    // A rail none of whose sends ever completed never came up: the rail check at connect.
    const bool never_up = p.conns.size() <= f.rail || !p.conns[f.rail]->reached;
    PeerDown(f.peer, SendFailure(p, directory_.Name(f.peer), f.rail, wc.status), never_up);
    return;
  }
  if (p.conns.size() > f.rail) p.conns[f.rail]->reached = true;
  if (f.stripe && !p.pending.empty() && p.pending.front().stripes_left > 0) {
    if (--p.pending.front().stripes_left == 0) Flush(f.peer);  // the closing write
    return;
  }
  if (f.put_last) {
    TransportEvent e = Event(TransportEvent::Kind::kPutDone, f.peer);
    e.cookie = f.cookie;
    e.bytes = f.bytes;
    Emit(std::move(e));
  }
}

void VerbsTransport::OnReceive(PeerId peer, PeerState& p, size_t rail, const uint8_t* data, uint32_t bytes) {
  auto h = VerbsWireHeader::Decode(data, bytes);
  if (!h) {
    spdlog::warn("verbs: malformed send from node {} ({} bytes)", directory_.Name(peer), bytes);
    return;
  }
  const uint8_t* payload = data + VerbsWireHeader::kBytes;
  const uint64_t n = bytes - VerbsWireHeader::kBytes;
  switch (h->type) {
    case VerbsWireHeader::kMessage: {
      if (n > kMaxTransportMessage) {
        spdlog::warn("verbs: a {}-byte message from node {} is over the limit", n, directory_.Name(peer));
        break;
      }
      ++stats_.control_frames_received;
      TransportEvent e = Event(TransportEvent::Kind::kMessage, peer);
      e.message_bytes = static_cast<uint32_t>(n);
      std::memcpy(e.message.data(), payload, n);
      Emit(std::move(e));
      break;
    }
    case VerbsWireHeader::kBouncePut: {
      auto it = regions_.find(h->key);
      const bool open = it != regions_.end() && (it->second.state == LocalRegion::State::kPending ||
                                                 it->second.state == LocalRegion::State::kRegistered);
      if (open && h->offset <= it->second.bytes &&
          n <= it->second.bytes - h->offset) {
        std::memcpy(it->second.base + h->offset, payload, n);
      } else {
        p.dropping = true;  // its group closed here, or the peer is confused: drop the put
      }
      if (h->last) {
        if (!p.dropping) {
          ++stats_.data_frames_received;
          TransportEvent e = Event(TransportEvent::Kind::kArrived, peer);
          e.imm = h->imm;
          e.bytes = h->total;
          Emit(std::move(e));
        }
        p.dropping = false;
      }
      break;
    }
    case VerbsWireHeader::kRegion: {
      auto a = RegionAnnouncement::Decode(payload, n);
      if (!a || a->rkeys.size() < p.conns.size()) break;
      RemoteRegion r;
      r.addr = a->addr;
      r.bytes = a->bytes;
      r.rkeys = std::move(a->rkeys);
      p.regions[h->key] = std::move(r);
      break;
    }
    case VerbsWireHeader::kRegionGone:
      p.regions.erase(h->key);
      p.put_rails.erase(h->key);
      // An acknowledgement on every rail, each behind whatever we already posted on it.
      for (size_t r = 0; r < p.conns.size(); ++r) {
        EnqueueControl(peer, VerbsWireHeader::kRegionGoneAck, h->key, "", static_cast<int>(r));
      }
      break;
    case VerbsWireHeader::kKeepalive:
      break;
    case VerbsWireHeader::kRegionGoneAck: {
      auto it = regions_.find(h->key);
      if (it == regions_.end() || it->second.state != LocalRegion::State::kClosing) break;
      it->second.acks_waiting.erase({peer, rail});
      if (it->second.acks_waiting.empty()) FinishClosing(h->key);
      break;
    }
  }
}

}  // namespace ohio
