// VerbsTransport's UD service: the peers outside the pool of RC queue pairs, reached through the
// rail's one datagram queue pair. A put is cut into datagrams of the rail's MTU, each carrying
// where its bytes land, sent from send slots (ud_queue_pair.h) and kept there until the peer
// acknowledges it, then placed by the receiving daemon in its region, which makes the one copy
// an RDMA write does not. Reliability (ud_reliability.h): numbered datagrams, cumulative and
// selective acknowledgements riding on every datagram (or alone when nothing else goes back),
// retransmission after a timeout, duplicates dropped, a bounded window, and a peer that
// acknowledges nothing for give_up_after is lost as an RC peer whose sends fail is. What the
// datagrams raise leaves in stream order (ud_peer_link.h). See verbs_transport.h.
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>

#include <spdlog/spdlog.h>

#include "daemon/transport/verbs/rc/gather_list.h"
#include "daemon/transport/verbs/verbs_transport.h"

namespace ohio {
uint32_t VerbsTransport::RcPeersHeld() const {
  uint32_t n = 0;
  for (const PeerState& p : peers_) n += p.pool.rc_held;
  return n;
}

std::vector<QpEndpoint> VerbsTransport::DatagramEndpoints() const {
  // The psn field says where this end's stream of datagrams starts: a new one at every dial, so
  // that a late datagram of a link replaced since falls outside the new one's window.
  static thread_local std::mt19937 gen(std::random_device{}());
  std::vector<QpEndpoint> out;
  const uint32_t first = gen() & 0xffffff;
  for (const auto& q : datagram_qps_) {
    out.push_back(q->local());
    out.back().psn = first;
  }
  return out;
}

Result<ibv_ah*> VerbsTransport::DatagramAddress(const std::vector<QpEndpoint>& remote, const std::string& peer) {
  if (datagram_qps_.empty()) {
    return Status(Code::kSystem, "node " + peer + " reaches this node only over UD, but this node keeps one RC queue "
                                 "pair per peer (rc-pool = unlimited) and has no datagram queue pair: give every "
                                 "node the same rc-pool");
  }
  if (remote.empty()) {
    return Status(Code::kSystem, "node " + peer + " has no datagram queue pair, and this node's pool of RC queue "
                                 "pairs is full: give every node the same rc-pool");
  }
  auto ah = datagram_qps_[0]->AddressOf(remote[0]);
  if (!ah.ok()) return Status(Code::kSystem, ah.status().message());
  return ah;
}

void VerbsTransport::AdoptDatagram(PeerState& p, PeerId peer, ibv_ah* ah, const QpEndpoint& remote,
                                   uint64_t incarnation, uint64_t dial_floor, uint32_t first_seq) {
  p.rc.conns.clear();
  p.rc.put_rails.clear();
  p.pool.rc_held = false;
  MakeDatagramLink(p, peer, ah, remote, first_seq);
  p.pool.ud_service = true;
  p.incarnation = incarnation;
  p.dial_floor = dial_floor;
  p.state = PeerState::State::kConnected;
  spdlog::info("verbs: connected to node {} over UD ({} to queue pair {} at {}): {} of this node's {} RC queue "
               "pairs are taken",
               directory_.Name(peer), datagram_qps_[0]->local().rail, remote.qpn, GidText(remote.gid),
               RcPeersHeld(), options_.rc_pool);
  // A first datagram at once: a peer that does not answer shows now, not at a group's first call.
  EnqueueControl(peer, VerbsWireHeader::kKeepalive, 0, "", 0);
}

void VerbsTransport::MakeDatagramLink(PeerState& p, PeerId peer, ibv_ah* ah, const QpEndpoint& remote,
                                      uint32_t first_sent) {
  p.ud = std::make_unique<UdPeerLink>(options_.datagrams, ah, remote.qpn, first_sent, remote.psn);
  datagram_senders_.emplace(remote.qpn, KnownDatagramSender{remote.gid, remote.lid, peer});
}

void VerbsTransport::DropDatagramLink(PeerId peer, PeerState& p) {
  if (!p.ud) return;
  UdQueuePair& q = *datagram_qps_[0];
  for (const auto& [seq, sent] : p.ud->slot_of_seq) q.Release(sent.slot);
  const auto [first, last] = datagram_senders_.equal_range(p.ud->qpn);
  for (auto it = first; it != last;) it = it->second.peer == peer ? datagram_senders_.erase(it) : std::next(it);
  datagram_peers_to_tend_.erase(peer);
  p.ud.reset();
}

bool VerbsTransport::PostDatagramPut(PeerId peer, PeerState& p, Op& op, const LocalPiece* pieces, size_t count) {
  UdPeerLink& l = *p.ud;
  if (op.total > UINT32_MAX) {
    PeerDown(peer, "a put of " + std::to_string(op.total) + " bytes is too large for UD (less than 4 GiB)");
    return false;
  }
  const uint32_t payload = datagram_qps_[0]->mtu_bytes() - static_cast<uint32_t>(UdWireHeader::kBytes);
  if (!op.started) {
    op.started = true;
    op.datagram_put = l.next_put++;
    ++stats_.data_frames_sent;
    ++stats_.datagram_puts;
  }
  // As many datagrams as the window and the send slots allow now, in one post; the rest on a
  // later pass. One clock reading for them all: on a guest without a clock the vDSO can read,
  // each is a system call.
  const UdClock::time_point now = UdClock::now();
  do {
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(payload, op.total - op.sent));
    UdWireHeader h;
    h.type = UdWireHeader::kData;
    h.imm = op.imm;
    h.key = op.key;
    h.start = op.offset;
    h.total = op.total;
    h.put = op.datagram_put;
    h.at = static_cast<uint32_t>(op.sent);
    if (!PostDatagram(peer, p, h, pieces, count, op.sent, n, now)) {
      datagram_qps_[0]->PostStaged();
      return false;
    }
    stats_.rail_put_bytes[0] += n;
    op.sent += n;
  } while (op.sent < op.total);
  datagram_qps_[0]->PostStaged();
  l.sent_puts.push_back({l.send.next_seq() - 1, op.cookie, op.total});
  return true;
}

bool VerbsTransport::PostDatagram(PeerId peer, PeerState& p, UdWireHeader h, const LocalPiece* pieces, size_t count,
                                  uint64_t from, uint32_t n, UdClock::time_point now) {
  UdQueuePair& q = *datagram_qps_[0];
  UdPeerLink& l = *p.ud;
  if (!l.send.HasRoom() || q.slots_exhausted() || q.send_free() == 0) return false;
  const uint32_t slot = *q.TakeSlot();
  h.seq = *l.send.Send(now);
  h.ack = l.receive.next_expected();
  h.sack = l.receive.sack();
  h.Encode(q.slot(slot));
  Gather(pieces, count, from, n, q.slot(slot) + UdWireHeader::kBytes);
  const uint32_t bytes = static_cast<uint32_t>(UdWireHeader::kBytes) + n;
  l.slot_of_seq[h.seq] = {slot, bytes};
  // Staged, posted by the caller with the rest; a post that fails leaves the datagram to its
  // retransmission, as if the network had lost it.
  q.Stage(slot, bytes, l.ah, l.qpn);
  l.ack_due = false;  // it carries our acknowledgement
  datagram_peers_to_tend_.insert(peer);  // until it is acknowledged
  ++stats_.datagrams_sent;
  return true;
}

void VerbsTransport::SendAck(PeerState& p) {
  UdQueuePair& q = *datagram_qps_[0];
  UdPeerLink& l = *p.ud;
  if (q.slots_exhausted() || q.send_free() == 0) return;  // still due: the next pass
  const uint32_t slot = *q.TakeSlot();
  UdWireHeader h;
  h.type = UdWireHeader::kAck;
  h.ack = l.receive.next_expected();
  h.sack = l.receive.sack();
  h.Encode(q.slot(slot));
  if (q.Stage(slot, static_cast<uint32_t>(UdWireHeader::kBytes), l.ah, l.qpn)) l.ack_due = false;
  q.Release(slot);  // acknowledgements are never sent again: the post's reference is the last
  q.PostStaged();
  ++stats_.datagram_acks_sent;
}

void VerbsTransport::OnDatagramCompletion(const ibv_wc& wc) {
  const size_t rail = UdQueuePair::RailOf(wc.wr_id);
  const uint32_t slot = UdQueuePair::SlotOf(wc.wr_id);
  if (rail >= datagram_qps_.size()) return;
  UdQueuePair& q = *datagram_qps_[rail];
  if (!UdQueuePair::IsReceive(wc.wr_id)) {
    q.SendCompleted(slot);
    if (wc.status != IBV_WC_SUCCESS && wc.status != IBV_WC_WR_FLUSH_ERR) {
      spdlog::warn("verbs: a datagram on {} failed: {}", q.local().rail, ibv_wc_status_str(wc.status));
    }
    return;
  }
  if (wc.status != IBV_WC_SUCCESS) {
    if (wc.status != IBV_WC_WR_FLUSH_ERR) {
      spdlog::warn("verbs: a datagram receive on {} failed: {}", q.local().rail, ibv_wc_status_str(wc.status));
      q.RepostReceive(slot);
    }
    return;
  }
  const DatagramSource source = IdentifyDatagramSource(
      datagram_senders_, {wc.src_qp, static_cast<uint16_t>(wc.slid), (wc.wc_flags & IBV_WC_GRH) != 0,
                          q.route_header(slot)});
  const uint32_t bytes = wc.byte_len > UdQueuePair::kGrhBytes ? wc.byte_len - UdQueuePair::kGrhBytes : 0;
  const auto h = UdWireHeader::Decode(q.received(slot), bytes);
  if (!source.peer) {
    // From no peer of ours, a link replaced since, or a sender that cannot be told apart: a
    // stray or forged sender may send many, so the lines are rate-limited.
    ++stats_.datagrams_refused;
    uint64_t suppressed = 0;
    if (unidentified_datagram_log_.Allow(&suppressed)) {
      spdlog::warn("verbs: a datagram on {} from queue pair {} (LID {}, {}) refused: {}{}", q.local().rail, wc.src_qp,
                   wc.slid, (wc.wc_flags & IBV_WC_GRH) != 0 ? "with a route header" : "without a route header",
                   source.refused, SuppressedNote(suppressed));
    }
  } else if (!h) {
    ++stats_.datagrams_refused;  // malformed
  } else if (options_.drop_one_datagram_in != 0 &&
             std::uniform_int_distribution<uint32_t>(1, options_.drop_one_datagram_in)(drop_chance_) == 1) {
    ++stats_.datagrams_dropped;
  } else {
    const PeerId peer = *source.peer;
    PeerState& p = Peer(peer);
    // The first datagram of a peer that started a move to UD, which this node answered: its
    // end is ready, and our line goes on UD from now on.
    if (p.move.FirstOnNewService(/*rc=*/false)) FinishMoveToUd(peer, p, nullptr);
    if (p.ud) OnDatagram(peer, p, *h, q.received(slot) + UdWireHeader::kBytes, bytes - static_cast<uint32_t>(UdWireHeader::kBytes));
  }
  q.RepostReceive(slot);
}

void VerbsTransport::OnDatagram(PeerId peer, PeerState& p, const UdWireHeader& h, const uint8_t* payload, uint32_t n) {
  UdPeerLink& l = *p.ud;
  ++stats_.datagrams_received;
  // Every datagram carries what its sender holds of ours; one that says it holds datagrams
  // never sent is not about this stream.
  if (!SeqBefore(l.send.next_seq(), h.ack)) {
    l.send.Acknowledge(h.ack, h.sack, poll_now_);
    UdQueuePair& q = *datagram_qps_[0];
    for (auto it = l.slot_of_seq.begin(); it != l.slot_of_seq.end();) {
      if (l.send.Held(it->first)) {
        q.Release(it->second.slot);
        it = l.slot_of_seq.erase(it);
      } else {
        ++it;
      }
    }
    while (!l.sent_puts.empty() && SeqBefore(l.sent_puts.front().last_seq, l.send.held_before())) {
      TransportEvent e = Event(TransportEvent::Kind::kPutDone, peer);
      e.cookie = l.sent_puts.front().cookie;
      e.bytes = l.sent_puts.front().bytes;
      l.sent_puts.pop_front();
      Emit(std::move(e));
    }
  }
  if (h.type == UdWireHeader::kAck) return;
  l.ack_due = true;  // whatever it is, its sender must hear that we hold it
  datagram_peers_to_tend_.insert(peer);
  const uint32_t before = l.receive.next_expected();
  const uint64_t position = l.in_order + (h.seq - before);
  switch (l.receive.Receive(h.seq)) {
    case UdReceiveWindow::Verdict::kDuplicate:
      ++stats_.datagram_duplicates;
      return;
    case UdReceiveWindow::Verdict::kBeyondWindow:
      ++stats_.datagrams_refused;
      return;
    case UdReceiveWindow::Verdict::kNew:
      break;
  }
  l.in_order += l.receive.next_expected() - before;
  if (h.type == UdWireHeader::kMoving) {
    auto notice = MoveNotice::Decode(payload, n);
    if (!notice) {
      PeerDown(peer, "node " + directory_.Name(peer) + " sent a malformed move notice");
      return;
    }
    l.held_notices.emplace(position, std::move(*notice));
  } else if (h.type == UdWireHeader::kMessage) {
    if (n > kMaxTransportMessage) {
      spdlog::warn("verbs: a {}-byte message from node {} is over the limit", n, directory_.Name(peer));
    } else {
      ++stats_.control_frames_received;
      TransportEvent e = Event(TransportEvent::Kind::kMessage, peer);
      e.message_bytes = n;
      std::memcpy(e.message.data(), payload, n);
      l.held.emplace(position, std::move(e));
    }
  } else if (h.type == UdWireHeader::kData) {
    auto it = regions_.find(h.key);
    const bool open = it != regions_.end() && it->second.Writable();
    const uint64_t at = h.start + h.at;
    if (open && h.start <= it->second.bytes && at >= h.start && at <= it->second.bytes &&
        n <= it->second.bytes - at && h.total <= it->second.bytes - h.start) {
      std::memcpy(it->second.base + at, payload, n);
    } else {
      l.dropped_puts.insert(h.put);  // its group closed here, or the peer is confused
    }
    if (h.at + n == h.total) l.last_of_put[h.put] = position;
    auto landed = l.assembly.Landed(h.put, h.start, h.total, h.imm, h.at, n);
    if (!landed.ok()) {
      PeerDown(peer, "datagrams from node " + directory_.Name(peer) + " contradict each other: " +
                         landed.status().message());
      return;
    }
    if (landed->has_value()) {
      const uint64_t last = l.last_of_put[h.put];
      l.last_of_put.erase(h.put);
      if (l.dropped_puts.erase(h.put) == 0) {
        ++stats_.data_frames_received;
        TransportEvent e = Event(TransportEvent::Kind::kArrived, peer);
        e.imm = *landed.value();
        e.bytes = h.total;
        l.held.emplace(last, std::move(e));
      }
    }
  }
  ReleaseHeld(peer, p);
}

void VerbsTransport::ReleaseHeld(PeerId peer, PeerState& p) {
  UdPeerLink& l = *p.ud;
  // Events and move notices alike, in stream order; a notice may replace the link (the switch
  // to RC) or lose the peer, and then nothing of the old link is left to release.
  for (;;) {
    auto event = l.held.begin();
    auto notice = l.held_notices.begin();
    const bool event_ready = event != l.held.end() && event->first < l.in_order;
    const bool notice_ready = notice != l.held_notices.end() && notice->first < l.in_order;
    if (notice_ready && (!event_ready || notice->first < event->first)) {
      const MoveNotice n = std::move(notice->second);
      l.held_notices.erase(notice);
      OnMoveNotice(peer, p, n);
      if (p.ud.get() != &l) return;
    } else if (event_ready) {
      Emit(std::move(event->second));
      l.held.erase(event);
    } else {
      return;
    }
  }
}

void VerbsTransport::TendDatagrams(UdClock::time_point now) {
  if (datagram_qps_.empty()) return;
  UdQueuePair& q = *datagram_qps_[0];
  for (auto tended = datagram_peers_to_tend_.begin(); tended != datagram_peers_to_tend_.end();) {
    const PeerId id = *tended;
    PeerState& p = peers_[id];
    // A peer with nothing left to do leaves the set, and a datagram sent or received puts it
    // back (a link dropped takes its peer out itself: DropDatagramLink).
    if (!p.ud || (p.ud->send.in_flight() == 0 && !p.ud->ack_due)) {
      tended = datagram_peers_to_tend_.erase(tended);
      continue;
    }
    ++tended;
    UdPeerLink& l = *p.ud;
    if (l.send.PeerSilent(now)) {
      spdlog::warn("verbs: node {} over UD: {} datagrams unacknowledged from {} on (next {}), {} with a send slot; "
                   "it acknowledged up to {}; we hold its stream up to {}; {} send queue entries and {} send slots free",
                   directory_.Name(id), l.send.in_flight(), l.send.next_seq() - l.send.in_flight(), l.send.next_seq(),
                   l.slot_of_seq.size(), l.send.held_before(), l.receive.next_expected(), q.send_free(),
                   q.slots_free());
      PeerDown(id, "node " + directory_.Name(id) + " acknowledged no datagram for " +
                       std::to_string(options_.datagrams.give_up_after.count()) + " ms (over UD)");
      continue;
    }
    for (uint32_t seq : l.send.DueForRetransmission(now)) {
      auto it = l.slot_of_seq.find(seq);
      if (it == l.slot_of_seq.end()) continue;
      // The slot still holds the datagram as first sent (it is rewritten only once acknowledged
      // and every post of it completed); its acknowledgement fields are old, which a receiver
      // takes as news of nothing.
      if (q.Stage(it->second.slot, it->second.bytes, l.ah, l.qpn)) ++stats_.datagram_retransmissions;
    }
    q.PostStaged();
    if (l.ack_due) SendAck(p);
  }
}

bool VerbsTransport::ArmDatagramTimer() {
  if (timer_fd_ < 0) return true;
  uint64_t expired;
  (void)!read(timer_fd_, &expired, sizeof(expired));
  itimerspec t{};
  std::optional<UdClock::time_point> next;
  for (const PeerId id : datagram_peers_to_tend_) {
    const PeerState& p = peers_[id];
    if (!p.ud) continue;
    if (p.ud->ack_due) return false;  // an acknowledgement to send first
    const auto due = p.ud->send.NextRetransmission();
    if (due && (!next || *due < *next)) next = due;
  }
  if (next) {
    // At least a microsecond: a zero it_value would disarm the timer instead.
    const auto after = std::max<std::chrono::nanoseconds>(*next - UdClock::now(), std::chrono::microseconds(1));
    t.it_value.tv_sec = after.count() / 1000000000;
    t.it_value.tv_nsec = after.count() % 1000000000;
  }
  timerfd_settime(timer_fd_, 0, &t, nullptr);
  return true;
}

}  // namespace ohio
