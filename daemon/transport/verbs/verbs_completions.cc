// VerbsTransport's completions: the completion queues polled on every pass of the engine and
// armed only before it sleeps, each completion settled (a put done, a slot back, a peer lost)
// and what peers sent taken in. See verbs_transport.h.
#include "daemon/transport/verbs/verbs_transport.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <spdlog/spdlog.h>

namespace ohio {

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
  // What a datagram's acknowledgement is timed by: one clock reading a poll, not one a datagram.
  const UdClock::time_point polled = UdClock::now();
  for (const auto& r : rails_) {
    ibv_wc wc[32];
    int n;
    do {
      n = ibv_poll_cq(r->cq(), 32, wc);
      for (int i = 0; i < n; ++i) OnCompletion(wc[i], polled);
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
  lines_->Tend(now);
  datagrams_->Tend(now);
  moves_->Tend(now);
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
  const bool can_sleep = datagrams_->ArmTimer();
  polling_ = false;
  return can_sleep && !arrived && events_.empty();
}

void VerbsTransport::OnCompletion(const ibv_wc& wc, UdClock::time_point polled) {
  if (UdQueuePair::Owns(wc.wr_id)) {
    datagrams_->OnCompletion(wc, polled);
    return;
  }
  if (VerbsConnection::IsReceive(wc.wr_id)) {
    const uint32_t serial = VerbsConnection::ReceiveSerial(wc.wr_id);
    const uint32_t slot = VerbsConnection::ReceiveSlot(wc.wr_id);
    const auto who = connector_->ReceiverOf(serial);
    if (!who) return;  // a connection dropped since
    const auto [peer, rail] = *who;
    PeerState& p = Peer(peer);
    // The first arrival on the queue pairs of a move to RC this node answered: the peer that
    // started it has connected its end, and our line goes on RC from now on.
    if (p.move.FirstOnNewService(/*rc=*/true) && wc.status == IBV_WC_SUCCESS) {
      moves_->FinishToRc(peer, nullptr);
    }
    if (rail >= p.rc.conns.size()) return;
    Connection* c = p.rc.conns[rail].get();
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
      OnReceive(peer, p, rail, c->received(slot), wc.byte_len);
    }
    if (p.state == PeerState::State::kConnected && p.rc.conns.size() > rail && p.rc.conns[rail].get() == c) {
      c->RepostReceive(slot);
    }
    return;
  }
  const std::optional<InFlight> done = rc_->Complete(wc.wr_id);
  if (!done) return;  // its peer went down since
  const InFlight& f = *done;
  PeerState& p = Peer(f.peer);
  if (p.generation != f.generation) return;
  if (p.rc.conns.size() > f.rail) ++p.rc.conns[f.rail]->send_free;
  if (wc.status != IBV_WC_SUCCESS) {
    // A rail none of whose sends ever completed never came up: the rail check at connect.
    const bool never_up = p.rc.conns.size() <= f.rail || !p.rc.conns[f.rail]->reached;
    PeerDown(f.peer, connector_->SendFailure(p.rc, directory_.Name(f.peer), f.rail, wc.status), never_up);
    return;
  }
  if (p.rc.conns.size() > f.rail) p.rc.conns[f.rail]->reached = true;
  if (f.stripe && !p.pending.empty() && p.pending.front().stripes_left > 0) {
    if (--p.pending.front().stripes_left == 0) lines_->Flush(f.peer);  // the closing write
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
      const LocalRegion* region = regions_->FindWritable(h->key);
      if (region != nullptr && h->offset <= region->bytes && n <= region->bytes - h->offset) {
        std::memcpy(region->base + h->offset, payload, n);
      } else {
        p.rc.dropping = true;  // its group closed here, or the peer is confused: drop the put
      }
      if (h->last) {
        if (!p.rc.dropping) {
          ++stats_.data_frames_received;
          TransportEvent e = Event(TransportEvent::Kind::kArrived, peer);
          e.imm = h->imm;
          e.bytes = h->total;
          Emit(std::move(e));
        }
        p.rc.dropping = false;
      }
      break;
    }
    case VerbsWireHeader::kRegion: {
      auto a = RegionAnnouncement::Decode(payload, n);
      if (!a || a->rkeys.size() < p.rc.conns.size()) break;
      RemoteRegion r;
      r.addr = a->addr;
      r.bytes = a->bytes;
      r.rkeys = std::move(a->rkeys);
      p.rc.regions[h->key] = std::move(r);
      break;
    }
    case VerbsWireHeader::kRegionGone:
      p.rc.regions.erase(h->key);
      p.rc.put_rails.erase(h->key);
      // An acknowledgement on every rail, each behind whatever we already posted on it.
      for (size_t r = 0; r < p.rc.conns.size(); ++r) {
        lines_->Enqueue(peer, VerbsWireHeader::kRegionGoneAck, h->key, "", static_cast<int>(r));
      }
      break;
    case VerbsWireHeader::kKeepalive:
      break;
    case VerbsWireHeader::kMoving: {
      // Handled last: a move may drop the queue pair whose receive ring `data` is in.
      auto notice = MoveNotice::Decode(payload, n);
      if (!notice) {
        PeerDown(peer, "node " + directory_.Name(peer) + " sent a malformed move notice");
        break;
      }
      moves_->OnNotice(peer, *notice);
      break;
    }
    case VerbsWireHeader::kRegionGoneAck:
      regions_->Acknowledged(h->key, peer, rail);
      break;
  }
}

}  // namespace ohio
