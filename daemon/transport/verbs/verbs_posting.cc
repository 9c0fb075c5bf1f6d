// VerbsTransport's posting: a peer's line of puts and sends, posted in order as room allows, on
// the service that carries the peer: its RC queue pairs (rc/rc_poster.h: direct, striped or
// bounce puts) or its datagram link (ud/datagram_service.h). See verbs_transport.h.
#include "daemon/transport/verbs/verbs_transport.h"

namespace ohio {

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
  // While the pair moves between services (pool/move_driver.h) only what the old service must
  // still carry goes: an op begun on it, and the move's notices; the rest waits for the new one.
  while (!p.pending.empty()) {
    Op& op = p.pending.front();
    const bool held = p.move.HoldsLine();
    if (held && !op.started && !op.move_notice) return;
    if (!PostOp(peer, p, op)) return;
    if (p.state != PeerState::State::kConnected) return;  // posting failed and dropped the peer
    const bool last_notice = op.move_last;
    p.pending.pop_front();
    if (last_notice) p.move.NoticePosted(std::chrono::steady_clock::now());
  }
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
    if (!datagrams_->PostSend(peer, type, payload, bytes)) return false;
    if (type == VerbsWireHeader::kMessage) ++stats_.control_frames_sent;
    return true;
  }
  const size_t on = rail >= 0 && static_cast<size_t>(rail) < p.rc.conns.size() ? rail : 0;
  VerbsWireHeader h;
  h.type = type;
  h.key = key;
  h.last = true;
  const LocalPiece piece{payload, bytes};
  if (!rc_->Send(peer, p.rc, p.generation, on, h, &piece, 1, 0, bytes, InFlight{})) return false;
  if (type == VerbsWireHeader::kMessage) ++stats_.control_frames_sent;
  return true;
}

bool VerbsTransport::PostPut(PeerId peer, PeerState& p, Op& op, const LocalPiece* pieces, size_t count) {
  if (p.pool.ud_service) return datagrams_->PostPut(peer, op, pieces, count);
  const LocalRegion* local = nullptr;
  const RemoteRegion* remote = nullptr;
  if (!op.started) {
    op.rail = static_cast<int>(PutRail(p, op.key, pieces, count));
    local = regions_->FindRegistered(pieces, count);
    auto it = p.rc.regions.find(op.key);
    if (it != p.rc.regions.end() && op.offset + op.total <= it->second.bytes) remote = &it->second;
    op.bounce = local == nullptr || remote == nullptr;
  }
  return rc_->Put(peer, p.rc, p.generation, op, local, remote, pieces, count);
}

}  // namespace ohio
