// VerbsTransport's posting: a peer's line of puts and sends, posted in order as room allows; a
// put as RDMA WRITEs with a gather list straight from the registered segment (the last one
// carrying the immediate), striped over the rails when large, or through bounce slots as SENDs
// until both regions are registered. See verbs_transport.h.
#include "daemon/transport/verbs/verbs_transport.h"

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
  p.pool.CountPut(op.total);
  // Posted from the caller's list at once when nothing waits before it; copied only to wait.
  if (p.state == PeerState::State::kConnected && p.pending.empty() && !p.move.moving()) {
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
  if (p.state == PeerState::State::kConnected && p.pending.empty() && !p.move.moving()) {
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
  // While the pair moves between services (verbs_moving.cc) only what the old service must
  // still carry goes: an op begun on it, and the move's notices; the rest waits for the new one.
  while (!p.pending.empty()) {
    Op& op = p.pending.front();
    const bool held = p.move.HoldsLine();
    if (held && !op.started && !op.move_notice) return;
    if (!PostOp(peer, p, op)) return;
    if (p.state != PeerState::State::kConnected) return;  // posting failed and dropped the peer
    const bool last_notice = op.move_last;
    p.pending.pop_front();
    if (last_notice) OnMoveNoticePosted(p);
  }
}

bool VerbsTransport::PostSend(PeerId peer, PeerState& p, size_t rail, const VerbsWireHeader& h,
                              const LocalPiece* pieces, size_t count, uint64_t from, uint64_t n, InFlight f) {
  Connection& c = *p.rc.conns[rail];
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
  f.generation = p.generation;
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
  if (p.pool.ud_service) {
    // Over UD the receiver places a put by its own region's key: the peer needs no notice of our
    // regions, and nothing of its is written into ours that it must tell us has stopped.
    UdWireHeader h;
    switch (type) {
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
    if (!PostDatagram(peer, p, h, &piece, 1, 0, static_cast<uint32_t>(bytes), UdClock::now())) return false;
    datagram_qps_[0]->PostStaged();
    if (type == VerbsWireHeader::kMessage) ++stats_.control_frames_sent;
    return true;
  }
  const size_t on = rail >= 0 && static_cast<size_t>(rail) < p.rc.conns.size() ? rail : 0;
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
  if (p.pool.ud_service) return PostDatagramPut(peer, p, op, pieces, count);
  const LocalRegion* local = nullptr;
  const RemoteRegion* remote = nullptr;
  if (!op.started) {
    op.rail = static_cast<int>(PutRail(p, op.key, pieces, count));
    local = FindRegistered(pieces, count);
    auto it = p.rc.regions.find(op.key);
    if (it != p.rc.regions.end() && op.offset + op.total <= it->second.bytes) remote = &it->second;
    op.bounce = local == nullptr || remote == nullptr;
  }
  if (!op.bounce && (op.striped || (p.rc.conns.size() > 1 && op.total >= kStripeMinBytes))) {
    return PostStriped(peer, p, op, local, remote, pieces, count);
  }
  const size_t rail = static_cast<size_t>(op.rail);
  Connection& c = *p.rc.conns[rail];
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
    Connection& c = *p.rc.conns[static_cast<size_t>(op.rail)];
    if (c.send_free == 0) return false;
    InFlight f;
    f.peer = peer;
    f.generation = p.generation;
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
      PeerDown(peer, std::string("posting an RDMA write failed: ") + std::strerror(e));
      return false;
    }
    --c.send_free;
    return true;
  }
  // Rail r writes bytes [r * share, (r + 1) * share): the stripes go out together or not at all.
  const size_t rails = p.rc.conns.size();
  const uint64_t share = ((op.total + rails - 1) / rails + kStripeAlign - 1) / kStripeAlign * kStripeAlign;
  std::vector<size_t> wrs_per_rail(rails, 0);
  for (size_t r = 0; r < rails && r * share < op.total; ++r) {
    const uint64_t len = std::min(share, op.total - r * share);
    RangeSges(pieces, count, r * share, len, local->mrs[r]->lkey, &sges_);
    wrs_per_rail[r] = WritesFor(*p.rc.conns[r]);
    if (p.rc.conns[r]->send_free < wrs_per_rail[r]) {
      op.started = false;  // decide again when there is room
      return false;
    }
  }
  op.started = true;
  op.striped = true;
  op.close_addr = remote->addr + op.offset;
  op.close_rkey = remote->rkeys[static_cast<size_t>(op.rail)];
  for (size_t r = 0; r < rails && r * share < op.total; ++r) {
    Connection& c = *p.rc.conns[r];
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

}  // namespace ohio
