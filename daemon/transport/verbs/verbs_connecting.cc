// VerbsTransport's connecting: a dial and its answer (the handshake through the peer service),
// the queue pairs' moves to RTR and RTS without the lock, their adoption under it, and a peer
// lost. See verbs_transport.h.
#include "daemon/transport/verbs/verbs_transport.h"

#include <cstring>

#include <spdlog/spdlog.h>

namespace ohio {

VerbsTransport::PeerState& VerbsTransport::Peer(PeerId peer) {
  if (peer >= peers_.size()) peers_.resize(size_t{peer} + 1);
  return peers_[peer];
}

void VerbsTransport::Adopt(PeerState& p, std::vector<std::unique_ptr<Connection>> conns, PeerId peer,
                           uint64_t incarnation, uint64_t dial_floor) {
  p.rc.conns = std::move(conns);
  p.pool.rc_held = true;
  p.pool.ud_service = false;
  p.rc.put_rails.clear();  // chosen among the rails of the connections replaced
  p.incarnation = incarnation;
  p.dial_floor = dial_floor;
  p.state = PeerState::State::kConnected;
  connector_->Listen(peer, p.rc.conns);
  std::string rails;
  for (const auto& c : p.rc.conns) rails += (rails.empty() ? "" : ", ") + c->qp->local().rail;
  spdlog::info("verbs: connected to node {} ({} queue pair(s): {})", directory_.Name(peer), p.rc.conns.size(), rails);
  if (p.rc.conns.size() < rails_.size()) {
    spdlog::warn("verbs: node {} has fewer rails than this node's {}: only the first {} are used with it",
                 directory_.Name(peer), rails_.size(), p.rc.conns.size());
  }
  // A first send on every rail at once, so that a rail that does not reach the peer's rail of
  // the same index shows now, by name, and not when a collective first uses it.
  for (size_t r = 0; r < p.rc.conns.size(); ++r) {
    lines_->Enqueue(peer, VerbsWireHeader::kKeepalive, 0, "", static_cast<int>(r));
  }
  for (const auto& [key, r] : regions_->all()) {
    if (r.state == LocalRegion::State::kRegistered) Announce(peer, key, r);
  }
  lines_->Flush(peer);
}

void VerbsTransport::AdoptDatagram(PeerState& p, PeerId peer, ibv_ah* ah, const QpEndpoint& remote,
                                   uint64_t incarnation, uint64_t dial_floor, uint32_t first_seq) {
  p.rc.conns.clear();
  p.rc.put_rails.clear();
  p.pool.rc_held = false;
  datagrams_->Link(peer, ah, remote, first_seq);
  p.pool.ud_service = true;
  p.incarnation = incarnation;
  p.dial_floor = dial_floor;
  p.state = PeerState::State::kConnected;
  spdlog::info("verbs: connected to node {} over UD ({} to queue pair {} at {}): {} of this node's {} RC queue "
               "pairs are taken",
               directory_.Name(peer), datagrams_->rail(), remote.qpn, GidText(remote.gid), moves_->RcPeersHeld(),
               options_.rc_pool);
  // A first datagram at once: a peer that does not answer shows now, not at a group's first call.
  lines_->Enqueue(peer, VerbsWireHeader::kKeepalive, 0, "", 0);
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
    // An RC queue pair while the pool has room (the peer may still answer with datagrams, when
    // its own pool is full); datagrams only once it is full.
    p.pool.rc_held = moves_->RcPeersHeld() < options_.rc_pool;
    offer.datagram_only = !p.pool.rc_held;
  }
  offer.datagram_endpoints = datagrams_->Endpoints();
  // Queue pairs are made and the peer called without the lock: the peer may be dialling us
  // at the same moment, and its call into Accept here must not wait for ours.
  std::vector<std::unique_ptr<Connection>> conns;
  Status made = Status::Ok();
  for (size_t r = 0; r < rails_.size() && made.ok() && !offer.datagram_only; ++r) {
    auto c = connector_->Make(r);
    if (!c.ok()) {
      made = c.status();
      break;
    }
    offer.endpoints.push_back(c.value()->qp->local());
    conns.push_back(std::move(c.value()));
  }
  Result<DialAnswer> theirs = made.ok() ? dialer(peer, offer) : Result<DialAnswer>(made);
  if (theirs.ok() && !theirs->datagram && theirs->endpoints.empty()) {
    theirs = Status(Code::kProtocol, "node " + peer + " offered no queue pairs");
  }
  if (theirs.ok() && !theirs->datagram && offer.datagram_only) {
    theirs = Status(Code::kSystem, "node " + peer + " answered an offer of datagrams only with RC queue pairs "
                                   "(an ohiod without the UD service?)");
  }
  ibv_ah* ah = nullptr;
  if (theirs.ok() && theirs->datagram) {
    conns.clear();  // the peer's pool is full, or ours
    auto a = datagrams_->AddressOf(theirs->datagram_endpoints, peer);
    if (a.ok()) {
      ah = a.value();
    } else {
      theirs = a.status();
    }
  } else if (theirs.ok() && StillCurrent(id, generation, PeerState::State::kDialing)) {
    // RTR and RTS without the lock too: RTR may wait for the peer's address (seconds, with
    // retries), and every put of every group takes the lock. The queue pairs are this call's
    // alone until Adopt; the generation, checked again below, tells whether the peer's own dial
    // was accepted meanwhile.
    conns.resize(std::min(conns.size(), theirs->endpoints.size()));  // rails both ends have
    Status s = connector_->ConnectRails(conns, theirs->endpoints, peer);
    if (!s.ok()) theirs = s;
  }
  std::lock_guard<std::mutex> lock(mu_);
  PeerState& p = Peer(id);
  if (p.generation != generation || p.state != PeerState::State::kDialing) {
    if (ah != nullptr) ibv_destroy_ah(ah);
    return Status::Ok();  // the peer's own dial got here first and was accepted; ours go
  }
  if (!theirs.ok()) {
    p.state = PeerState::State::kIdle;
    p.pool.rc_held = false;
    spdlog::warn("verbs: cannot connect to node {}: {}", peer, theirs.status().message());
    // Not a dial that crossed the peer's own (refused): the queue pairs cannot be made or
    // connected, here or there, and waiting will not change that (RTR was already tried again
    // while the peer's address might only be unresolved yet). The groups that need this peer
    // fail now, with the reason, instead of at their timeout.
    if (theirs.status().code() == Code::kSystem) {
      TransportEvent e = EventOutbox::Make(TransportEvent::Kind::kPeerDown, id);
      e.reason = theirs.status().message();
      e.never_up = true;
      outbox_->Emit(std::move(e));
    }
    return theirs.status();
  }
  if (theirs->datagram) {
    AdoptDatagram(p, id, ah, theirs->datagram_endpoints[0], theirs->incarnation, theirs->dials_started,
                  offer.datagram_endpoints[0].psn);
  } else {
    Adopt(p, std::move(conns), id, theirs->incarnation, theirs->dials_started);
  }
  return Status::Ok();
}

Result<DialAnswer> VerbsTransport::Accept(const std::string& peer, const DialOffer& offer) {
  const std::vector<QpEndpoint>& remote = offer.endpoints;
  if (remote.empty() && offer.datagram_endpoints.empty()) {
    return Status(Code::kProtocol, "no queue pair endpoints offered");
  }
  if (peer == self_) return Status(Code::kRefused, "node " + self_ + " cannot connect to itself");
  const PeerId id = directory_.For(peer);
  uint64_t generation = 0;
  bool use_rc = false;
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
    // RC when the dialler offers it and our pool has room (a dial of our own that this one
    // replaces held a place, given back first).
    p.pool.rc_held = false;
    use_rc = !offer.datagram_only && !remote.empty() && moves_->RcPeersHeld() < options_.rc_pool;
    p.pool.rc_held = use_rc;
  }
  // Made and connected without the lock, as in Connect: registering the receive rings and RTR,
  // which may wait for the peer's address, must not hold up every group's puts.
  std::vector<std::unique_ptr<Connection>> conns;
  Status made = Status::Ok();
  ibv_ah* ah = nullptr;
  if (use_rc) {
    for (size_t r = 0; r < std::min(rails_.size(), remote.size()) && made.ok(); ++r) {
      auto c = connector_->Make(r);
      if (!c.ok()) {
        made = c.status();
        break;
      }
      conns.push_back(std::move(c.value()));
    }
    if (made.ok()) made = connector_->ConnectRails(conns, remote, peer);
  } else {
    auto a = datagrams_->AddressOf(offer.datagram_endpoints, peer);
    if (a.ok()) {
      ah = a.value();
    } else {
      made = a.status();
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  PeerState& p = Peer(id);
  if (p.generation != generation) {
    if (ah != nullptr) ibv_destroy_ah(ah);
    return Status(Code::kRefused, "node " + self_ + " took a newer dial from node " + peer + " instead of this one");
  }
  if (!made.ok()) {
    p.state = PeerState::State::kIdle;
    p.pool.rc_held = false;
    spdlog::warn("verbs: cannot accept node {}: {}", peer, made.message());
    TransportEvent e = EventOutbox::Make(TransportEvent::Kind::kPeerDown, id);  // as in Connect
    e.reason = made.message();
    e.never_up = true;
    outbox_->Emit(std::move(e));
    return Status(Code::kSystem, made.message());
  }
  if (!use_rc) {
    answer.datagram = true;
    answer.datagram_endpoints = datagrams_->Endpoints();
    AdoptDatagram(p, id, ah, offer.datagram_endpoints[0], offer.incarnation, offer.dial_seq,
                  answer.datagram_endpoints[0].psn);
    return answer;
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

void VerbsTransport::PeerDown(PeerId peer, const std::string& reason, bool never_up) {
  PeerState& p = Peer(peer);
  if (p.state != PeerState::State::kConnected) return;
  spdlog::warn("verbs: lost node {}: {}", directory_.Name(peer), reason);
  connector_->Forget(p.rc.conns);
  p.rc = RcPeer{};
  p.pool = PoolSeat{};
  datagrams_->Unlink(peer);  // its puts on it are given up on by the exchange at kPeerDown
  p.pending.clear();  // puts among them are given up on by the exchange at kPeerDown
  p.state = PeerState::State::kIdle;
  p.move.Reset();
  ++p.generation;
  rc_->ReleasePeer(peer);
  regions_->ForgetPeer(peer);
  TransportEvent e = EventOutbox::Make(TransportEvent::Kind::kPeerDown, peer);
  e.reason = reason;
  e.never_up = never_up;
  outbox_->Emit(std::move(e));
}

}  // namespace ohio
