#include "daemon/transport/verbs/pool/move_driver.h"

#include <algorithm>
#include <iterator>

#include <spdlog/spdlog.h>

#include "daemon/transport/verbs/verbs_wire.h"

namespace ohio {

using PeerState = VerbsPeerState;

MoveDriver::MoveDriver(std::string self, Options options, std::unique_ptr<RcPoolPlan> plan,
                       std::deque<VerbsPeerState>* peers, RcConnector* connector, DatagramService* datagrams,
                       TransportStats* stats, Host host)
    : self_(std::move(self)),
      options_(options),
      plan_(std::move(plan)),
      last_plan_(std::chrono::steady_clock::now()),
      peers_(peers),
      connector_(connector),
      datagrams_(datagrams),
      stats_(stats),
      host_(std::move(host)) {}

uint32_t MoveDriver::RcPeersHeld() const {
  uint32_t n = 0;
  for (const PeerState& p : *peers_) n += p.pool.rc_held;
  return n;
}

void MoveDriver::Plan(std::chrono::steady_clock::time_point now) {
  last_plan_ = now;
  std::vector<PeerTraffic> traffic;
  for (PeerId id = 0; id < peers_->size(); ++id) {
    PeerState& p = (*peers_)[id];
    if (p.state != PeerState::State::kConnected) {
      plan_->RemovePeer(id);
      continue;
    }
    plan_->Place(id, !p.pool.ud_service);
    traffic.push_back({id, p.pool.traffic_bytes, p.pool.traffic_puts});
    p.pool.ForgetTraffic();
  }
  for (const RcPoolMove& m : plan_->EndInterval(traffic)) {
    PeerState& p = (*peers_)[m.peer];
    if (p.state != PeerState::State::kConnected || p.move.moving() || p.pool.ud_service != m.to_rc) continue;
    // Strictly within the pool: a member being demoted holds its place until it has left, so a
    // promotion that displaces it waits for the next interval.
    if (m.to_rc && RcPeersHeld() >= options_.rc_pool) continue;
    if (m.to_rc) p.pool.rc_held = true;
    p.move.Start(m.to_rc, now);
    spdlog::info("verbs: moving node {} to {} ({} datagrams' worth an interval)", host_.name(m.peer),
                 m.to_rc ? "RC" : "UD", plan_->Cost(m.peer));
  }
}

bool MoveDriver::Drained(PeerId peer, const PeerState& p) const {
  if (!p.pending.empty() && p.pending.front().started) return false;
  if (p.pool.ud_service) return datagrams_->Drained(peer);
  return !host_.any_in_flight(peer);
}

void MoveDriver::Tend(std::chrono::steady_clock::time_point now) {
  if (plan_ && now - last_plan_ >= options_.interval) Plan(now);
  for (PeerId id = 0; id < peers_->size(); ++id) {
    PeerState& p = (*peers_)[id];
    if (p.state != PeerState::State::kConnected || !p.move.moving()) continue;
    if (p.move.TimedOut(now, options_.give_up_after)) {
      host_.lose_peer(id, "node " + host_.name(id) + " did not complete a move to " + (p.move.to_rc() ? "RC" : "UD") +
                              " within " + std::to_string(options_.give_up_after.count()) + " ms");
      continue;
    }
    if (!p.move.ReadyToNotify(Drained(id, p))) continue;
    MoveNotice notice;
    notice.to_rc = p.move.to_rc();
    if (p.move.to_rc()) {
      // New queue pairs, one per rail, waiting in INIT for the answer's endpoints.
      Connections conns;
      for (size_t r = 0; r < rails(); ++r) {
        auto c = connector_->Make(r);
        if (!c.ok()) {
          spdlog::warn("verbs: not moving node {} to RC: {}", host_.name(id), c.status().message());
          Abandon(p);
          host_.flush(id);
          break;
        }
        notice.endpoints.push_back(c.value()->qp->local());
        conns.push_back(std::move(c.value()));
      }
      if (!p.move.moving()) continue;
      connector_->Listen(id, conns);
      p.rc.conns = std::move(conns);
    } else {
      notice.endpoints = {datagrams_->Endpoints()[0]};
      p.move.set_first_sent(notice.endpoints[0].psn);
    }
    SendNotices(id, p, notice, /*front=*/true);
  }
}

void MoveDriver::SendNotices(PeerId peer, PeerState& p, const MoveNotice& notice, bool front) {
  // Over RC one on every rail, each behind what that rail carries; over UD one, in the stream.
  const size_t count = p.pool.ud_service ? 1 : p.rc.conns.size();
  const std::string payload = notice.Encode();
  std::vector<PendingOp> ops(count);
  for (size_t r = 0; r < count; ++r) {
    ops[r].kind = PendingOp::Kind::kSend;
    ops[r].type = VerbsWireHeader::kMoving;
    ops[r].payload = payload;
    ops[r].rail = static_cast<int>(r);
    ops[r].move_notice = true;
    ops[r].move_last = r + 1 == count && !notice.refused;
  }
  // The starter's notices go before its held line, which is for the new service; an answer
  // goes behind what the old service still has to carry.
  if (front) {
    p.pending.insert(p.pending.begin(), std::make_move_iterator(ops.begin()), std::make_move_iterator(ops.end()));
  } else {
    p.pending.insert(p.pending.end(), std::make_move_iterator(ops.begin()), std::make_move_iterator(ops.end()));
  }
  host_.flush(peer);
}

void MoveDriver::Abandon(PeerState& p) {
  for (auto it = p.pending.begin(); it != p.pending.end();) {
    it = it->move_notice ? p.pending.erase(it) : std::next(it);
  }
  if (p.move.to_rc() && p.pool.ud_service) {
    connector_->Forget(p.rc.conns);
    p.rc.conns.clear();  // made for the move and never used: nothing of ours is in flight on them
    p.pool.rc_held = false;
  }
  p.move.Reset();
}

void MoveDriver::OnNotice(PeerId peer, const MoveNotice& notice) {
  PeerState& p = (*peers_)[peer];
  const std::string name = host_.name(peer);
  const size_t expected = p.pool.ud_service ? 1 : p.rc.conns.size();
  bool abandon_ours = false;
  switch (p.move.OnNotice({notice.to_rc, notice.reply, notice.refused}, p.pool.ud_service, expected,
                          /*we_go_first=*/self_ < name, &abandon_ours)) {
    case MoveStep::kWait:
    case MoveStep::kKeepOurs:  // both started it: ours goes on, and the peer answers ours
      return;
    case MoveStep::kWrongService:
      host_.lose_peer(peer, "node " + name + " sent a move notice that does not fit the service it came on");
      return;
    case MoveStep::kConflict:
      host_.lose_peer(peer, "node " + name + " started a move while this node was answering one of its");
      return;
    case MoveStep::kRefused:
      spdlog::info("verbs: node {} has no room in its pool of RC queue pairs: it stays on UD", name);
      ++stats_->rc_moves_refused;
      Abandon(p);
      host_.flush(peer);
      return;
    case MoveStep::kFinish:
      if (notice.to_rc) {
        FinishToRc(peer, &notice.endpoints);
      } else {
        FinishToUd(peer, &notice.endpoints[0]);
      }
      return;
    case MoveStep::kAnswer:
      if (abandon_ours) Abandon(p);
      Answer(peer, p, notice);
      return;
  }
}

void MoveDriver::Answer(PeerId peer, PeerState& p, const MoveNotice& notice) {
  const std::string name = host_.name(peer);
  MoveNotice answer;
  answer.to_rc = notice.to_rc;
  answer.reply = true;
  if (notice.to_rc) {
    if (RcPeersHeld() >= options_.rc_pool) {
      answer.refused = true;
      SendNotices(peer, p, answer, /*front=*/false);
      return;
    }
    Connections conns;
    for (size_t r = 0; r < std::min(rails(), notice.endpoints.size()); ++r) {
      auto c = connector_->Make(r);
      if (!c.ok()) {
        host_.lose_peer(peer, "moving node " + name + " to RC: " + c.status().message());
        return;
      }
      conns.push_back(std::move(c.value()));
    }
    // With the lock held: the peer's address is resolved already (its datagrams come from it),
    // so RTR is not expected to wait.
    if (Status s = connector_->ConnectRails(conns, notice.endpoints, name); !s.ok()) {
      host_.lose_peer(peer, "moving node " + name + " to RC: " + s.message());
      return;
    }
    for (const auto& c : conns) answer.endpoints.push_back(c->qp->local());
    connector_->Listen(peer, conns);
    p.rc.conns = std::move(conns);
    p.pool.rc_held = true;
  } else {
    auto ah = datagrams_->AddressOf(notice.endpoints, name);
    if (!ah.ok()) {
      host_.lose_peer(peer, "moving node " + name + " to UD: " + ah.status().message());
      return;
    }
    answer.endpoints = {datagrams_->Endpoints()[0]};
    datagrams_->Link(peer, ah.value(), notice.endpoints[0], answer.endpoints[0].psn);
    host_.forget_peer_in_closing(peer);  // its notice was the last it wrote over RC
  }
  p.move.Answer(notice.to_rc, std::chrono::steady_clock::now());
  SendNotices(peer, p, answer, /*front=*/false);
}

void MoveDriver::FinishToRc(PeerId peer, const std::vector<QpEndpoint>* remote) {
  PeerState& p = (*peers_)[peer];
  if (remote != nullptr) {
    p.rc.conns.resize(std::min(p.rc.conns.size(), remote->size()));
    if (Status s = connector_->ConnectRails(p.rc.conns, *remote, host_.name(peer)); !s.ok()) {
      host_.lose_peer(peer, "moving node " + host_.name(peer) + " to RC: " + s.message());
      return;
    }
  }
  // Every datagram we sent has arrived (the peer's notice or first RC send came after it): our
  // puts over UD are done, whether or not their acknowledgement made it back.
  for (const UdPeerLink::SentPut& put : datagrams_->Unlink(peer)) {
    TransportEvent e;
    e.kind = TransportEvent::Kind::kPutDone;
    e.peer = peer;
    e.cookie = put.cookie;
    e.bytes = put.bytes;
    host_.emit(std::move(e));
  }
  p.move.Reset();
  ++stats_->rc_promotions;
  spdlog::info("verbs: node {} moved to RC", host_.name(peer));
  host_.adopt(peer, std::move(p.rc.conns));  // its regions announced, the line flushed
}

void MoveDriver::FinishToUd(PeerId peer, const QpEndpoint* remote) {
  PeerState& p = (*peers_)[peer];
  if (remote != nullptr) {
    auto ah = datagrams_->AddressOf({*remote}, host_.name(peer));
    if (!ah.ok()) {
      host_.lose_peer(peer, "moving node " + host_.name(peer) + " to UD: " + ah.status().message());
      return;
    }
    host_.forget_peer_in_closing(peer);  // its answer was the last it wrote over RC
    datagrams_->Link(peer, ah.value(), *remote, p.move.first_sent());
  }
  DropRcConnections(peer, p);
  p.pool.ud_service = true;
  p.move.Reset();
  ++stats_->rc_demotions;
  spdlog::info("verbs: node {} moved to UD: {} of this node's {} RC queue pairs are taken", host_.name(peer),
               RcPeersHeld(), options_.rc_pool);
  // At once, so that the other end switches (the starter's) or hears we did (its answer is in).
  p.pending.push_front(PendingOp{});
  p.pending.front().type = VerbsWireHeader::kKeepalive;
  host_.flush(peer);
}

void MoveDriver::DropRcConnections(PeerId peer, PeerState& p) {
  connector_->Forget(p.rc.conns);
  p.rc.conns.clear();
  host_.release_in_flight(peer);
  ++p.generation;  // completions of what was posted on them are stale
  p.rc.regions.clear();
  p.rc.put_rails.clear();
  p.rc.dropping = false;
  p.pool.rc_held = false;
}

}  // namespace ohio
