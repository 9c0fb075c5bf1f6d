#include "daemon/transport/verbs/ud/datagram_service.h"

#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "daemon/transport/verbs/rc/gather_list.h"
#include "daemon/transport/verbs/verbs_sizes.h"
#include "daemon/transport/verbs/verbs_wire.h"

namespace ohio {

Result<std::unique_ptr<DatagramService>> DatagramService::Create(const std::vector<Rail*>& rails, Options options,
                                                                 Host host, TransportStats* stats) {
  std::unique_ptr<DatagramService> s(new DatagramService(options, std::move(host), stats));
  if (rails.empty()) return s;
  for (size_t r = 0; r < rails.size(); ++r) {
    auto q = UdQueuePair::Create(*rails[r], r, verbs_sizes::kUdRecvSlots, verbs_sizes::kUdSendDepth,
                                 verbs_sizes::kUdSendDepth);
    if (!q.ok()) return q.status();
    s->qps_.push_back(std::move(q.value()));
  }
  s->timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (s->timer_fd_ < 0) return SystemError("timerfd_create", errno);
  return s;
}

DatagramService::DatagramService(Options options, Host host, TransportStats* stats)
    : options_(options), host_(std::move(host)), stats_(stats) {}

DatagramService::~DatagramService() {
  links_.clear();  // their address handles before the queue pairs
  qps_.clear();
  if (timer_fd_ >= 0) close(timer_fd_);
}

uint32_t DatagramService::payload_bytes() const {
  return qps_[0]->mtu_bytes() - static_cast<uint32_t>(UdWireHeader::kBytes);
}

std::string DatagramService::rail() const { return qps_.empty() ? std::string() : qps_[0]->local().rail; }

std::vector<QpEndpoint> DatagramService::Endpoints() const {
  // The psn field says where this end's stream of datagrams starts: a new one at every dial, so
  // that a late datagram of a link replaced since falls outside the new one's window.
  static thread_local std::mt19937 gen(std::random_device{}());
  std::vector<QpEndpoint> out;
  const uint32_t first = gen() & 0xffffff;
  for (const auto& q : qps_) {
    out.push_back(q->local());
    out.back().psn = first;
  }
  return out;
}

Result<ibv_ah*> DatagramService::AddressOf(const std::vector<QpEndpoint>& remote, const std::string& peer) {
  if (qps_.empty()) {
    return Status(Code::kSystem, "node " + peer + " reaches this node only over UD, but this node keeps one RC queue "
                                 "pair per peer (rc-pool = unlimited) and has no datagram queue pair: give every "
                                 "node the same rc-pool");
  }
  if (remote.empty()) {
    return Status(Code::kSystem, "node " + peer + " has no datagram queue pair, and this node's pool of RC queue "
                                 "pairs is full: give every node the same rc-pool");
  }
  auto ah = qps_[0]->AddressOf(remote[0]);
  if (!ah.ok()) return Status(Code::kSystem, ah.status().message());
  return ah;
}

UdPeerLink* DatagramService::link(PeerId peer) {
  auto it = links_.find(peer);
  return it == links_.end() ? nullptr : it->second.get();
}

void DatagramService::Link(PeerId peer, ibv_ah* ah, const QpEndpoint& remote, uint32_t first_sent) {
  // A link replaced: its slots go back and its sender entry goes before the new one's.
  Unlink(peer);
  links_[peer] = std::make_unique<UdPeerLink>(options_.stream, ah, remote.qpn, first_sent, remote.psn);
  senders_.emplace(remote.qpn, KnownDatagramSender{remote.gid, remote.lid, peer});
}

std::deque<UdPeerLink::SentPut> DatagramService::Unlink(PeerId peer) {
  auto found = links_.find(peer);
  if (found == links_.end()) return {};
  UdPeerLink& l = *found->second;
  UdQueuePair& q = *qps_[0];
  for (const auto& [seq, sent] : l.slot_of_seq) q.Release(sent.slot);
  const auto [first, last] = senders_.equal_range(l.qpn);
  for (auto it = first; it != last;) it = it->second.peer == peer ? senders_.erase(it) : std::next(it);
  to_tend_.erase(peer);
  std::deque<UdPeerLink::SentPut> unacknowledged = std::move(l.sent_puts);
  links_.erase(found);
  return unacknowledged;
}

bool DatagramService::Drained(PeerId peer) const {
  auto it = links_.find(peer);
  return it != links_.end() && it->second->send.in_flight() == 0;
}

bool DatagramService::PostPut(PeerId peer, PendingOp& op, const LocalPiece* pieces, size_t count) {
  UdPeerLink& l = *link(peer);
  if (op.total > UINT32_MAX) {
    host_.lose_peer(peer, "a put of " + std::to_string(op.total) + " bytes is too large for UD (less than 4 GiB)");
    return false;
  }
  const uint32_t payload = payload_bytes();
  if (!op.started) {
    op.started = true;
    op.datagram_put = l.next_put++;
    ++stats_->data_frames_sent;
    ++stats_->datagram_puts;
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
    if (!Post(peer, l, h, pieces, count, op.sent, n, now)) {
      qps_[0]->PostStaged();
      return false;
    }
    stats_->rail_put_bytes[0] += n;
    op.sent += n;
  } while (op.sent < op.total);
  qps_[0]->PostStaged();
  l.sent_puts.push_back({l.send.next_seq() - 1, op.cookie, op.total});
  return true;
}

bool DatagramService::PostSend(PeerId peer, uint32_t verbs_type, const void* payload, size_t bytes) {
  // Over UD the receiver places a put by its own region's key: the peer needs no notice of our
  // regions, and nothing of its is written into ours that it must tell us has stopped.
  UdWireHeader h;
  switch (verbs_type) {
    case VerbsWireHeader::kMessage:
      h.type = UdWireHeader::kMessage;
      break;
    case VerbsWireHeader::kKeepalive:
      h.type = UdWireHeader::kKeepalive;
      break;
    case VerbsWireHeader::kMoving:
      h.type = UdWireHeader::kMoving;
      break;
    default:
      return true;
  }
  const LocalPiece piece{payload, bytes};
  if (!Post(peer, *link(peer), h, &piece, 1, 0, static_cast<uint32_t>(bytes), UdClock::now())) return false;
  qps_[0]->PostStaged();
  return true;
}

bool DatagramService::Post(PeerId peer, UdPeerLink& l, UdWireHeader h, const LocalPiece* pieces, size_t count,
                           uint64_t from, uint32_t n, UdClock::time_point now) {
  UdQueuePair& q = *qps_[0];
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
  to_tend_.insert(peer);  // until it is acknowledged
  ++stats_->datagrams_sent;
  return true;
}

void DatagramService::SendAck(UdPeerLink& l) {
  UdQueuePair& q = *qps_[0];
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
  ++stats_->datagram_acks_sent;
}

void DatagramService::OnCompletion(const ibv_wc& wc, UdClock::time_point now) {
  const size_t rail = UdQueuePair::RailOf(wc.wr_id);
  const uint32_t slot = UdQueuePair::SlotOf(wc.wr_id);
  if (rail >= qps_.size()) return;
  UdQueuePair& q = *qps_[rail];
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
      senders_, {wc.src_qp, static_cast<uint16_t>(wc.slid), (wc.wc_flags & IBV_WC_GRH) != 0, q.route_header(slot)});
  const uint32_t bytes = wc.byte_len > UdQueuePair::kGrhBytes ? wc.byte_len - UdQueuePair::kGrhBytes : 0;
  const auto h = UdWireHeader::Decode(q.received(slot), bytes);
  if (!source.peer) {
    // From no peer of ours, a link replaced since, or a sender that cannot be told apart: a
    // stray or forged sender may send many, so the lines are rate-limited.
    ++stats_->datagrams_refused;
    uint64_t suppressed = 0;
    if (unidentified_log_.Allow(&suppressed)) {
      spdlog::warn("verbs: a datagram on {} from queue pair {} (LID {}, {}) refused: {}{}", q.local().rail, wc.src_qp,
                   wc.slid, (wc.wc_flags & IBV_WC_GRH) != 0 ? "with a route header" : "without a route header",
                   source.refused, SuppressedNote(suppressed));
    }
  } else if (!h) {
    ++stats_->datagrams_refused;  // malformed
  } else if (options_.drop_one_datagram_in != 0 &&
             std::uniform_int_distribution<uint32_t>(1, options_.drop_one_datagram_in)(drop_chance_) == 1) {
    ++stats_->datagrams_dropped;
  } else {
    const PeerId peer = *source.peer;
    host_.arrived(peer);
    if (UdPeerLink* l = link(peer)) {
      OnDatagram(peer, *l, *h, q.received(slot) + UdWireHeader::kBytes,
                 bytes - static_cast<uint32_t>(UdWireHeader::kBytes), now);
    }
  }
  q.RepostReceive(slot);
}

void DatagramService::OnDatagram(PeerId peer, UdPeerLink& l, const UdWireHeader& h, const uint8_t* payload,
                                 uint32_t n, UdClock::time_point now) {
  ++stats_->datagrams_received;
  // Every datagram carries what its sender holds of ours; one that says it holds datagrams
  // never sent is not about this stream.
  if (!SeqBefore(l.send.next_seq(), h.ack)) {
    l.send.Acknowledge(h.ack, h.sack, now);
    UdQueuePair& q = *qps_[0];
    for (auto it = l.slot_of_seq.begin(); it != l.slot_of_seq.end();) {
      if (l.send.Held(it->first)) {
        q.Release(it->second.slot);
        it = l.slot_of_seq.erase(it);
      } else {
        ++it;
      }
    }
    while (!l.sent_puts.empty() && SeqBefore(l.sent_puts.front().last_seq, l.send.held_before())) {
      TransportEvent e;
      e.kind = TransportEvent::Kind::kPutDone;
      e.peer = peer;
      e.cookie = l.sent_puts.front().cookie;
      e.bytes = l.sent_puts.front().bytes;
      l.sent_puts.pop_front();
      host_.emit(std::move(e));
    }
  }
  if (h.type == UdWireHeader::kAck) return;
  l.ack_due = true;  // whatever it is, its sender must hear that we hold it
  to_tend_.insert(peer);
  const uint32_t before = l.receive.next_expected();
  const uint64_t position = l.in_order + (h.seq - before);
  switch (l.receive.Receive(h.seq)) {
    case UdReceiveWindow::Verdict::kDuplicate:
      ++stats_->datagram_duplicates;
      return;
    case UdReceiveWindow::Verdict::kBeyondWindow:
      ++stats_->datagrams_refused;
      return;
    case UdReceiveWindow::Verdict::kNew:
      break;
  }
  l.in_order += l.receive.next_expected() - before;
  if (h.type == UdWireHeader::kMoving) {
    auto notice = MoveNotice::Decode(payload, n);
    if (!notice) {
      host_.lose_peer(peer, "node " + host_.name(peer) + " sent a malformed move notice");
      return;
    }
    l.held_notices.emplace(position, std::move(*notice));
  } else if (h.type == UdWireHeader::kMessage) {
    if (n > kMaxTransportMessage) {
      spdlog::warn("verbs: a {}-byte message from node {} is over the limit", n, host_.name(peer));
    } else {
      ++stats_->control_frames_received;
      TransportEvent e;
      e.kind = TransportEvent::Kind::kMessage;
      e.peer = peer;
      e.message_bytes = n;
      std::memcpy(e.message.data(), payload, n);
      l.held.emplace(position, std::move(e));
    }
  } else if (h.type == UdWireHeader::kData) {
    const std::optional<OpenRegion> region = host_.open_region(h.key);
    const uint64_t at = h.start + h.at;
    if (region && h.start <= region->bytes && at >= h.start && at <= region->bytes && n <= region->bytes - at &&
        h.total <= region->bytes - h.start) {
      std::memcpy(region->base + at, payload, n);
    } else {
      l.dropped_puts.insert(h.put);  // its group closed here, or the peer is confused
    }
    if (h.at + n == h.total) l.last_of_put[h.put] = position;
    auto landed = l.assembly.Landed(h.put, h.start, h.total, h.imm, h.at, n);
    if (!landed.ok()) {
      host_.lose_peer(peer, "datagrams from node " + host_.name(peer) + " contradict each other: " +
                                landed.status().message());
      return;
    }
    if (landed->has_value()) {
      const uint64_t last = l.last_of_put[h.put];
      l.last_of_put.erase(h.put);
      if (l.dropped_puts.erase(h.put) == 0) {
        ++stats_->data_frames_received;
        TransportEvent e;
        e.kind = TransportEvent::Kind::kArrived;
        e.peer = peer;
        e.imm = *landed.value();
        e.bytes = h.total;
        l.held.emplace(last, std::move(e));
      }
    }
  }
  ReleaseHeld(peer, l);
}

void DatagramService::ReleaseHeld(PeerId peer, UdPeerLink& l) {
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
      host_.move_notice(peer, n);
      if (link(peer) != &l) return;
    } else if (event_ready) {
      host_.emit(std::move(event->second));
      l.held.erase(event);
    } else {
      return;
    }
  }
}

void DatagramService::Tend(UdClock::time_point now) {
  if (qps_.empty()) return;
  UdQueuePair& q = *qps_[0];
  for (auto tended = to_tend_.begin(); tended != to_tend_.end();) {
    const PeerId id = *tended;
    UdPeerLink* found = link(id);
    // A peer with nothing left to do leaves the set, and a datagram sent or received puts it
    // back (a link dropped takes its peer out itself: Unlink).
    if (found == nullptr || (found->send.in_flight() == 0 && !found->ack_due)) {
      tended = to_tend_.erase(tended);
      continue;
    }
    ++tended;
    UdPeerLink& l = *found;
    if (l.send.PeerSilent(now)) {
      spdlog::warn("verbs: node {} over UD: {} datagrams unacknowledged from {} on (next {}), {} with a send slot; "
                   "it acknowledged up to {}; we hold its stream up to {}; {} send queue entries and {} send slots free",
                   host_.name(id), l.send.in_flight(), l.send.next_seq() - l.send.in_flight(), l.send.next_seq(),
                   l.slot_of_seq.size(), l.send.held_before(), l.receive.next_expected(), q.send_free(),
                   q.slots_free());
      host_.lose_peer(id, "node " + host_.name(id) + " acknowledged no datagram for " +
                              std::to_string(options_.stream.give_up_after.count()) + " ms (over UD)");
      continue;
    }
    for (uint32_t seq : l.send.DueForRetransmission(now)) {
      auto it = l.slot_of_seq.find(seq);
      if (it == l.slot_of_seq.end()) continue;
      // The slot still holds the datagram as first sent (it is rewritten only once acknowledged
      // and every post of it completed); its acknowledgement fields are old, which a receiver
      // takes as news of nothing.
      if (q.Stage(it->second.slot, it->second.bytes, l.ah, l.qpn)) ++stats_->datagram_retransmissions;
    }
    q.PostStaged();
    if (l.ack_due) SendAck(l);
  }
}

bool DatagramService::ArmTimer() {
  if (timer_fd_ < 0) return true;
  uint64_t expired;
  (void)!read(timer_fd_, &expired, sizeof(expired));
  itimerspec t{};
  std::optional<UdClock::time_point> next;
  for (const PeerId id : to_tend_) {
    auto it = links_.find(id);
    if (it == links_.end()) continue;
    const UdPeerLink& l = *it->second;
    if (l.ack_due) return false;  // an acknowledgement to send first
    const auto due = l.send.NextRetransmission();
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
