// The rails' completions, each settled by what it is. See completion_dispatcher.h.
#include "daemon/transport/verbs/completion_dispatcher.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include <spdlog/spdlog.h>

namespace ohio {
namespace {
using PeerState = VerbsPeerState;
}  // namespace

int CompletionDispatcher::Poll() {
  int handled = 0;
  // What a datagram's acknowledgement is timed by: one clock reading a poll, not one a datagram.
  const UdClock::time_point polled = UdClock::now();
  for (Rail* r : parts_.rails) {
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

void CompletionDispatcher::OnCompletion(const ibv_wc& wc, UdClock::time_point polled) {
  if (UdQueuePair::Owns(wc.wr_id)) {
    parts_.datagrams->OnCompletion(wc, polled);
  } else if (VerbsConnection::IsReceive(wc.wr_id)) {
    OnRcReceive(wc);
  } else {
    OnRcSendDone(wc);
  }
}

void CompletionDispatcher::OnRcReceive(const ibv_wc& wc) {
  const uint32_t serial = VerbsConnection::ReceiveSerial(wc.wr_id);
  const uint32_t slot = VerbsConnection::ReceiveSlot(wc.wr_id);
  const auto who = parts_.connector->ReceiverOf(serial);
  if (!who) return;  // a connection dropped since
  const auto [peer, rail] = *who;
  PeerState& p = (*parts_.peers)[peer];
  // The first arrival on the queue pairs of a move to RC this node answered: the peer that
  // started it has connected its end, and our line goes on RC from now on.
  if (p.move.FirstOnNewService(/*rc=*/true) && wc.status == IBV_WC_SUCCESS) {
    parts_.moves->FinishToRc(peer, nullptr);
  }
  if (rail >= p.rc.conns.size()) return;
  VerbsConnection* c = p.rc.conns[rail].get();
  if (wc.status != IBV_WC_SUCCESS) {
    lose_peer_(peer, std::string("receive on ") + c->qp->local().rail + ": " + ibv_wc_status_str(wc.status),
               false);
    return;
  }
  if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
    ++parts_.stats->data_frames_received;
    TransportEvent e = EventOutbox::Make(TransportEvent::Kind::kArrived, peer);
    e.imm = ntohl(wc.imm_data);
    e.bytes = wc.byte_len;
    parts_.events->Emit(std::move(e));
  } else {
    OnRcSend(peer, p, rail, c->received(slot), wc.byte_len);
  }
  if (p.state == PeerState::State::kConnected && p.rc.conns.size() > rail && p.rc.conns[rail].get() == c) {
    c->RepostReceive(slot);
  }
}

void CompletionDispatcher::OnRcSendDone(const ibv_wc& wc) {
  const std::optional<InFlight> done = parts_.rc->Complete(wc.wr_id);
  if (!done) return;  // its peer went down since
  const InFlight& f = *done;
  PeerState& p = (*parts_.peers)[f.peer];
  if (p.generation != f.generation) return;
  if (p.rc.conns.size() > f.rail) ++p.rc.conns[f.rail]->send_free;
  if (wc.status != IBV_WC_SUCCESS) {
    // A rail none of whose sends ever completed never came up: the rail check at connect.
    const bool never_up = p.rc.conns.size() <= f.rail || !p.rc.conns[f.rail]->reached;
    lose_peer_(f.peer, parts_.connector->SendFailure(p.rc, parts_.directory->Name(f.peer), f.rail, wc.status),
               never_up);
    return;
  }
  if (p.rc.conns.size() > f.rail) p.rc.conns[f.rail]->reached = true;
  if (f.stripe && !p.pending.empty() && p.pending.front().stripes_left > 0) {
    if (--p.pending.front().stripes_left == 0) parts_.lines->Flush(f.peer);  // the closing write
    return;
  }
  if (f.put_last) {
    TransportEvent e = EventOutbox::Make(TransportEvent::Kind::kPutDone, f.peer);
    e.cookie = f.cookie;
    e.bytes = f.bytes;
    parts_.events->Emit(std::move(e));
  }
}

void CompletionDispatcher::OnRcSend(PeerId peer, PeerState& p, size_t rail, const uint8_t* data, uint32_t bytes) {
  auto h = VerbsWireHeader::Decode(data, bytes);
  if (!h) {
    spdlog::warn("verbs: malformed send from node {} ({} bytes)", parts_.directory->Name(peer), bytes);
    return;
  }
  const uint8_t* payload = data + VerbsWireHeader::kBytes;
  const uint64_t n = bytes - VerbsWireHeader::kBytes;
  switch (h->type) {
    case VerbsWireHeader::kMessage: {
      if (n > kMaxTransportMessage) {
        spdlog::warn("verbs: a {}-byte message from node {} is over the limit", n, parts_.directory->Name(peer));
        break;
      }
      ++parts_.stats->control_frames_received;
      TransportEvent e = EventOutbox::Make(TransportEvent::Kind::kMessage, peer);
      e.message_bytes = static_cast<uint32_t>(n);
      std::memcpy(e.message.data(), payload, n);
      parts_.events->Emit(std::move(e));
      break;
    }
    case VerbsWireHeader::kBouncePut: {
      const LocalRegion* region = parts_.regions->FindWritable(h->key);
      if (region != nullptr && h->offset <= region->bytes && n <= region->bytes - h->offset) {
        std::memcpy(region->base + h->offset, payload, n);
      } else {
        p.rc.dropping = true;  // its group closed here, or the peer is confused: drop the put
      }
      if (h->last) {
        if (!p.rc.dropping) {
          ++parts_.stats->data_frames_received;
          TransportEvent e = EventOutbox::Make(TransportEvent::Kind::kArrived, peer);
          e.imm = h->imm;
          e.bytes = h->total;
          parts_.events->Emit(std::move(e));
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
        parts_.lines->Enqueue(peer, VerbsWireHeader::kRegionGoneAck, h->key, "", static_cast<int>(r));
      }
      break;
    case VerbsWireHeader::kKeepalive:
      break;
    case VerbsWireHeader::kMoving: {
      // Handled last: a move may drop the queue pair whose receive ring `data` is in.
      auto notice = MoveNotice::Decode(payload, n);
      if (!notice) {
        lose_peer_(peer, "node " + parts_.directory->Name(peer) + " sent a malformed move notice", false);
        break;
      }
      parts_.moves->OnNotice(peer, *notice);
      break;
    }
    case VerbsWireHeader::kRegionGoneAck:
      parts_.regions->Acknowledged(h->key, peer, rail);
      break;
  }
}

}  // namespace ohio
