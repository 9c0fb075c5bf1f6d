// VerbsTransport's moves between its two services while groups keep running: the pool of RC
// queue pairs planned from each interval's traffic (rc_pool_plan.h), a peer promoted to RC or
// demoted to UD as the plan asks, and the handshake that keeps both ends agreeing which service
// carries what.
//
// A move never has a put in flight on the old service when the new one starts, and what the
// peer raises (a put's immediate, a message) still leaves in the order it was posted:
//   1. The starter holds its line and waits until nothing of its is in flight to the peer
//      (every datagram acknowledged, every work request completed), then posts a notice as the
//      last thing on the old service: to RC with new queue pairs' endpoints (one per rail), to
//      UD with its datagram queue pair and where its new stream starts.
//   2. The other end takes the notice after everything the starter sent before it (UD holds
//      events until the stream is whole; over RC a notice comes on every rail, behind what was
//      posted there), connects its end of the new service, and answers on the old service,
//      behind whatever it had posted there, then holds its line. A move to RC it has no room
//      for it refuses, and nothing changes.
//   3. The starter takes the answer after everything the other end sent before it, connects its
//      end and switches: the old service is dropped and its line goes on the new one.
//   4. The other end switches when the first thing the starter sends on the new service arrives
//      (the starter sends at once: a keepalive on every rail, or a datagram), so its own first
//      sends find the starter's end ready.
// When both ends start the same move at once, the node whose name sorts first goes on and the
// other answers it. A move that is not answered within the datagrams' give-up time loses the
// peer, as a connection that stops answering does. See verbs_transport.h.
#include <spdlog/spdlog.h>

#include "daemon/transport/verbs/verbs_transport.h"

namespace ohio {

void VerbsTransport::PlanPool(std::chrono::steady_clock::time_point now) {
  last_plan_ = now;
  if (!pool_plan_) return;
  std::vector<PeerTraffic> traffic;
  for (PeerId id = 0; id < peers_.size(); ++id) {
    PeerState& p = peers_[id];
    if (p.state != PeerState::State::kConnected) {
      pool_plan_->RemovePeer(id);
      continue;
    }
    pool_plan_->Place(id, !p.pool.ud_service);
    traffic.push_back({id, p.pool.traffic_bytes, p.pool.traffic_puts});
    p.pool.ForgetTraffic();
  }
  for (const RcPoolMove& m : pool_plan_->EndInterval(traffic)) {
    PeerState& p = peers_[m.peer];
    if (p.state != PeerState::State::kConnected || p.move.moving() || p.pool.ud_service != m.to_rc) continue;
    // Strictly within the pool: a member being demoted holds its place until it has left, so a
    // promotion that displaces it waits for the next interval.
    if (m.to_rc && RcPeersHeld() >= options_.rc_pool) continue;
    if (m.to_rc) p.pool.rc_held = true;
    p.move.Start(m.to_rc, now);
    spdlog::info("verbs: moving node {} to {} ({} datagrams' worth an interval)", directory_.Name(m.peer),
                 m.to_rc ? "RC" : "UD", pool_plan_->Cost(m.peer));
  }
}

bool VerbsTransport::Drained(PeerId peer, const PeerState& p) const {
  if (!p.pending.empty() && p.pending.front().started) return false;
  if (p.pool.ud_service) return p.ud != nullptr && p.ud->send.in_flight() == 0;
  return !in_flight_.AnyFor(peer);
}

void VerbsTransport::TendMoves(std::chrono::steady_clock::time_point now) {
  if (pool_plan_ && now - last_plan_ >= options_.rc_pool_interval) PlanPool(now);
  for (PeerId id = 0; id < peers_.size(); ++id) {
    PeerState& p = peers_[id];
    if (p.state != PeerState::State::kConnected || !p.move.moving()) continue;
    if (p.move.TimedOut(now, options_.datagrams.give_up_after)) {
      PeerDown(id, "node " + directory_.Name(id) + " did not complete a move to " + (p.move.to_rc() ? "RC" : "UD") +
                       " within " + std::to_string(options_.datagrams.give_up_after.count()) + " ms");
      continue;
    }
    if (!p.move.ReadyToNotify(Drained(id, p))) continue;
    MoveNotice notice;
    notice.to_rc = p.move.to_rc();
    if (p.move.to_rc()) {
      // New queue pairs, one per rail, waiting in INIT for the answer's endpoints.
      std::vector<std::unique_ptr<Connection>> conns;
      for (size_t r = 0; r < rails_.size(); ++r) {
        auto c = MakeConnection(r);
        if (!c.ok()) {
          spdlog::warn("verbs: not moving node {} to RC: {}", directory_.Name(id), c.status().message());
          AbandonMove(p);
          Flush(id);
          break;
        }
        notice.endpoints.push_back(c.value()->qp->local());
        conns.push_back(std::move(c.value()));
      }
      if (!p.move.moving()) continue;
      for (size_t r = 0; r < conns.size(); ++r) receivers_[conns[r]->serial] = {id, r};
      p.rc.conns = std::move(conns);
    } else {
      notice.endpoints = {DatagramEndpoints()[0]};
      p.move.set_first_sent(notice.endpoints[0].psn);
    }
    SendMoveNotices(id, p, notice, /*front=*/true);
  }
}

void VerbsTransport::SendMoveNotices(PeerId peer, PeerState& p, const MoveNotice& notice, bool front) {
  // Over RC one on every rail, each behind what that rail carries; over UD one, in the stream.
  const size_t count = p.pool.ud_service ? 1 : p.rc.conns.size();
  const std::string payload = notice.Encode();
  std::vector<Op> ops(count);
  for (size_t r = 0; r < count; ++r) {
    ops[r].kind = Op::Kind::kSend;
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
  Flush(peer);
}

void VerbsTransport::OnMoveNoticePosted(PeerState& p) { p.move.NoticePosted(std::chrono::steady_clock::now()); }

void VerbsTransport::AbandonMove(PeerState& p) {
  for (auto it = p.pending.begin(); it != p.pending.end();) {
    it = it->move_notice ? p.pending.erase(it) : std::next(it);
  }
  if (p.move.to_rc() && p.pool.ud_service) {
    for (auto& c : p.rc.conns) receivers_.erase(c->serial);
    p.rc.conns.clear();  // made for the move and never used: nothing of ours is in flight on them
    p.pool.rc_held = false;
  }
  p.move.Reset();
}

void VerbsTransport::OnMoveNotice(PeerId peer, PeerState& p, const MoveNotice& notice) {
  const std::string name = directory_.Name(peer);
  const size_t expected = p.pool.ud_service ? 1 : p.rc.conns.size();
  bool abandon_ours = false;
  switch (p.move.OnNotice({notice.to_rc, notice.reply, notice.refused}, p.pool.ud_service, expected,
                          /*we_go_first=*/self_ < name, &abandon_ours)) {
    case MoveStep::kWait:
    case MoveStep::kKeepOurs:  // both started it: ours goes on, and the peer answers ours
      return;
    case MoveStep::kWrongService:
      PeerDown(peer, "node " + name + " sent a move notice that does not fit the service it came on");
      return;
    case MoveStep::kConflict:
      PeerDown(peer, "node " + name + " started a move while this node was answering one of its");
      return;
    case MoveStep::kRefused:
      spdlog::info("verbs: node {} has no room in its pool of RC queue pairs: it stays on UD", name);
      ++stats_.rc_moves_refused;
      AbandonMove(p);
      Flush(peer);
      return;
    case MoveStep::kFinish:
      if (notice.to_rc) {
        FinishMoveToRc(peer, p, &notice.endpoints);
      } else {
        FinishMoveToUd(peer, p, &notice.endpoints[0]);
      }
      return;
    case MoveStep::kAnswer:
      if (abandon_ours) AbandonMove(p);
      AnswerMove(peer, p, notice);
      return;
  }
}

void VerbsTransport::AnswerMove(PeerId peer, PeerState& p, const MoveNotice& notice) {
  const std::string name = directory_.Name(peer);
  MoveNotice answer;
  answer.to_rc = notice.to_rc;
  answer.reply = true;
  if (notice.to_rc) {
    if (RcPeersHeld() >= options_.rc_pool) {
      answer.refused = true;
      SendMoveNotices(peer, p, answer, /*front=*/false);
      return;
    }
    std::vector<std::unique_ptr<Connection>> conns;
    for (size_t r = 0; r < std::min(rails_.size(), notice.endpoints.size()); ++r) {
      auto c = MakeConnection(r);
      if (!c.ok()) {
        PeerDown(peer, "moving node " + name + " to RC: " + c.status().message());
        return;
      }
      conns.push_back(std::move(c.value()));
    }
    // With the lock held: the peer's address is resolved already (its datagrams come from it),
    // so RTR is not expected to wait.
    if (Status s = ConnectRails(conns, notice.endpoints, name); !s.ok()) {
      PeerDown(peer, "moving node " + name + " to RC: " + s.message());
      return;
    }
    for (size_t r = 0; r < conns.size(); ++r) {
      answer.endpoints.push_back(conns[r]->qp->local());
      receivers_[conns[r]->serial] = {peer, r};
    }
    p.rc.conns = std::move(conns);
    p.pool.rc_held = true;
  } else {
    auto ah = DatagramAddress(notice.endpoints, name);
    if (!ah.ok()) {
      PeerDown(peer, "moving node " + name + " to UD: " + ah.status().message());
      return;
    }
    answer.endpoints = {DatagramEndpoints()[0]};
    MakeDatagramLink(p, peer, ah.value(), notice.endpoints[0], answer.endpoints[0].psn);
    ForgetPeerInClosing(peer);  // its notice was the last it wrote over RC
  }
  p.move.Answer(notice.to_rc, std::chrono::steady_clock::now());
  SendMoveNotices(peer, p, answer, /*front=*/false);
}

void VerbsTransport::FinishMoveToRc(PeerId peer, PeerState& p, const std::vector<QpEndpoint>* remote) {
  if (remote != nullptr) {
    p.rc.conns.resize(std::min(p.rc.conns.size(), remote->size()));
    if (Status s = ConnectRails(p.rc.conns, *remote, directory_.Name(peer)); !s.ok()) {
      PeerDown(peer, "moving node " + directory_.Name(peer) + " to RC: " + s.message());
      return;
    }
  }
  // Every datagram we sent has arrived (the peer's notice or first RC send came after it): our
  // puts over UD are done, whether or not their acknowledgement made it back.
  for (const UdPeerLink::SentPut& put : p.ud->sent_puts) {
    TransportEvent e = Event(TransportEvent::Kind::kPutDone, peer);
    e.cookie = put.cookie;
    e.bytes = put.bytes;
    Emit(std::move(e));
  }
  DropDatagramLink(peer, p);
  p.move.Reset();
  ++stats_.rc_promotions;
  spdlog::info("verbs: node {} moved to RC", directory_.Name(peer));
  std::vector<std::unique_ptr<Connection>> conns = std::move(p.rc.conns);
  Adopt(p, std::move(conns), peer, p.incarnation, p.dial_floor);  // its regions announced, the line flushed
}

void VerbsTransport::FinishMoveToUd(PeerId peer, PeerState& p, const QpEndpoint* remote) {
  if (remote != nullptr) {
    auto ah = DatagramAddress({*remote}, directory_.Name(peer));
    if (!ah.ok()) {
      PeerDown(peer, "moving node " + directory_.Name(peer) + " to UD: " + ah.status().message());
      return;
    }
    ForgetPeerInClosing(peer);  // its answer was the last it wrote over RC
    MakeDatagramLink(p, peer, ah.value(), *remote, p.move.first_sent());
  }
  DropRcConnections(peer, p);
  p.pool.ud_service = true;
  p.move.Reset();
  ++stats_.rc_demotions;
  spdlog::info("verbs: node {} moved to UD: {} of this node's {} RC queue pairs are taken", directory_.Name(peer),
               RcPeersHeld(), options_.rc_pool);
  // At once, so that the other end switches (the starter's) or hears we did (its answer is in).
  p.pending.push_front(Op{});
  p.pending.front().type = VerbsWireHeader::kKeepalive;
  Flush(peer);
}

void VerbsTransport::DropRcConnections(PeerId peer, PeerState& p) {
  for (auto& c : p.rc.conns) receivers_.erase(c->serial);
  p.rc.conns.clear();
  in_flight_.ReleasePeer(peer, [&](const InFlight& f) {
    if (f.slot >= 0) pools_[f.rail]->Return(static_cast<uint32_t>(f.slot));
  });
  ++p.generation;  // completions of what was posted on them are stale
  p.rc.regions.clear();
  p.rc.put_rails.clear();
  p.rc.dropping = false;
  p.pool.rc_held = false;
}

void VerbsTransport::ForgetPeerInClosing(PeerId peer) {
  std::vector<uint64_t> closed;
  for (auto& [key, r] : regions_) {
    if (r.state != LocalRegion::State::kClosing) continue;
    for (auto it = r.acks_waiting.begin(); it != r.acks_waiting.end();) {
      it = it->first == peer ? r.acks_waiting.erase(it) : std::next(it);
    }
    if (r.acks_waiting.empty() && !r.mrs.empty()) closed.push_back(key);
  }
  for (uint64_t key : closed) FinishClosing(key);
}

}  // namespace ohio
