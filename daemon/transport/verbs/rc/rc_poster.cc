#include "daemon/transport/verbs/rc/rc_poster.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "daemon/transport/verbs/rc/gather_list.h"

namespace ohio {
namespace {

// A put at least this large, to a peer reached over several rails, is cut into one stripe per
// rail (whole pages), all written at once; below it one rail's bandwidth is not what limits
// the put, and the extra work requests and the closing write would only add latency.
constexpr uint64_t kStripeMinBytes = 256u << 10;
constexpr uint64_t kStripeAlign = 4096;

}  // namespace

bool RcPoster::Put(PeerId peer, RcPeer& rc, uint64_t generation, PendingOp& op, const LocalRegion* local,
                   const RemoteRegion* remote, const LocalPiece* pieces, size_t count) {
  if (!op.bounce && (op.striped || (rc.conns.size() > 1 && op.total >= kStripeMinBytes))) {
    return Striped(peer, rc, generation, op, local, remote, pieces, count);
  }
  const size_t rail = static_cast<size_t>(op.rail);
  VerbsConnection& c = *rc.conns[rail];
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
    f.generation = generation;
    f.rail = rail;
    f.cookie = op.cookie;
    f.bytes = op.total;
    if (!Writes(peer, c, remote->addr + op.offset, remote->rkeys[rail], f, op.imm)) return false;
    ++stats_->direct_puts;
    ++stats_->data_frames_sent;
    stats_->rail_put_bytes[rail] += op.total;
    return true;
  }
  if (!op.started) {
    op.started = true;
    ++stats_->bounce_puts;
    ++stats_->data_frames_sent;
  }
  // Through bounce slots, as many fragments as there are slots now; the rest on a later pass.
  do {
    const uint64_t n = std::min<uint64_t>(BouncePool::kPayloadBytes, op.total - op.sent);
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
    if (!Send(peer, rc, generation, rail, h, pieces, count, op.sent, n, f)) return false;
    stats_->bounce_bytes += n;
    stats_->rail_put_bytes[rail] += n;
    op.sent += n;
  } while (op.sent < op.total);
  return true;
}

bool RcPoster::Send(PeerId peer, RcPeer& rc, uint64_t generation, size_t rail, const VerbsWireHeader& h,
                    const LocalPiece* pieces, size_t count, uint64_t from, uint64_t n, InFlight f) {
  VerbsConnection& c = *rc.conns[rail];
  BouncePool& pool = *pools_[rail];
  if (c.send_free == 0 || pool.exhausted()) return false;
  const uint32_t slot = *pool.Take();
  uint8_t* at = pool.at(slot);
  h.Encode(at);
  Gather(pieces, count, from, n, at + VerbsWireHeader::kBytes);
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(at);
  sge.length = static_cast<uint32_t>(VerbsWireHeader::kBytes + n);
  sge.lkey = pool.lkey();
  f.peer = peer;
  f.generation = generation;
  f.rail = rail;
  f.slot = static_cast<int>(slot);
  ibv_send_wr wr{};
  wr.wr_id = in_flight_.Track(f);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  if (int e = ibv_post_send(c.qp->qp(), &wr, &bad); e != 0) {
    lose_peer_(peer, std::string("posting a send failed: ") + std::strerror(e));  // returns the slot too
    return false;
  }
  --c.send_free;
  return true;
}

size_t RcPoster::WritesFor(const VerbsConnection& c) const {
  const uint32_t per_wr = c.qp->max_sge();
  return std::max<size_t>(1, (sges_.size() + per_wr - 1) / per_wr);
}

bool RcPoster::Writes(PeerId peer, VerbsConnection& c, uint64_t remote_at, uint32_t rkey, InFlight each,
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
    wr.wr_id = in_flight_.Track(f);
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
    lose_peer_(peer, std::string("posting an RDMA write failed: ") + std::strerror(e));
    return false;
  }
  c.send_free -= static_cast<uint32_t>(wrs);
  return true;
}

bool RcPoster::Striped(PeerId peer, RcPeer& rc, uint64_t generation, PendingOp& op, const LocalRegion* local,
                       const RemoteRegion* remote, const LocalPiece* pieces, size_t count) {
  if (op.striped) {
    if (op.stripes_left > 0) return false;
    // Every stripe is acknowledged, so it has been placed in the peer's memory (RC): the
    // immediate may tell the peer, on the put's own rail, so that the group's puts to this
    // peer still raise their immediates in the order they were posted.
    VerbsConnection& c = *rc.conns[static_cast<size_t>(op.rail)];
    if (c.send_free == 0) return false;
    InFlight f;
    f.peer = peer;
    f.generation = generation;
    f.rail = c.rail;
    f.put_last = true;
    f.cookie = op.cookie;
    f.bytes = op.total;
    ibv_send_wr wr{};
    wr.wr_id = in_flight_.Track(f);
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = htonl(op.imm);
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = op.close_addr;
    wr.wr.rdma.rkey = op.close_rkey;
    ibv_send_wr* bad = nullptr;
    if (int e = ibv_post_send(c.qp->qp(), &wr, &bad); e != 0) {
      lose_peer_(peer, std::string("posting an RDMA write failed: ") + std::strerror(e));
      return false;
    }
    --c.send_free;
    return true;
  }
  // Rail r writes bytes [r * share, (r + 1) * share): the stripes go out together or not at all.
  const size_t rails = rc.conns.size();
  const uint64_t share = ((op.total + rails - 1) / rails + kStripeAlign - 1) / kStripeAlign * kStripeAlign;
  std::vector<size_t> wrs_per_rail(rails, 0);
  for (size_t r = 0; r < rails && r * share < op.total; ++r) {
    const uint64_t len = std::min(share, op.total - r * share);
    RangeSges(pieces, count, r * share, len, local->mrs[r]->lkey, &sges_);
    wrs_per_rail[r] = WritesFor(*rc.conns[r]);
    if (rc.conns[r]->send_free < wrs_per_rail[r]) {
      op.started = false;  // decide again when there is room
      return false;
    }
  }
  op.started = true;
  op.striped = true;
  op.close_addr = remote->addr + op.offset;
  op.close_rkey = remote->rkeys[static_cast<size_t>(op.rail)];
  for (size_t r = 0; r < rails && r * share < op.total; ++r) {
    VerbsConnection& c = *rc.conns[r];
    const uint64_t len = std::min(share, op.total - r * share);
    RangeSges(pieces, count, r * share, len, local->mrs[r]->lkey, &sges_);
    InFlight f;
    f.peer = peer;
    f.generation = generation;
    f.rail = r;
    f.stripe = true;
    if (!Writes(peer, c, remote->addr + op.offset + r * share, remote->rkeys[r], f, std::nullopt)) return false;
    op.stripes_left += static_cast<uint32_t>(wrs_per_rail[r]);
    stats_->rail_put_bytes[r] += len;
  }
  ++stats_->direct_puts;
  ++stats_->striped_puts;
  ++stats_->data_frames_sent;
  return false;  // first in line until the stripes are acknowledged (OnCompletion)
}

std::optional<InFlight> RcPoster::Complete(uint64_t wr_id) {
  std::optional<InFlight> done = in_flight_.Complete(wr_id);
  if (done && done->slot >= 0) pools_[done->rail]->Return(static_cast<uint32_t>(done->slot));
  return done;
}

void RcPoster::ReleasePeer(PeerId peer) {
  in_flight_.ReleasePeer(peer, [&](const InFlight& f) {
    if (f.slot >= 0) pools_[f.rail]->Return(static_cast<uint32_t>(f.slot));
  });
}

}  // namespace ohio
