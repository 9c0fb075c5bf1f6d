// Every peer's line, posted in order on the service that carries it. See peer_lines.h.
#include "daemon/transport/verbs/peer_lines.h"

#include <utility>

namespace ohio {
namespace {

// RDMA says nothing when a peer process dies; a send to it fails after the retries. While the
// progress engine is polling (some group is busy) every rail to every peer carries at least
// one send this often, so a group waiting on a dead peer learns of it in a few seconds.
constexpr auto kKeepaliveInterval = std::chrono::milliseconds(500);

using PeerState = VerbsPeerState;

}  // namespace

void PeerLines::Put(PeerId peer, PendingOp op, const LocalPiece* pieces, size_t count) {
  PeerState& p = (*peers_)[peer];
  p.pool.CountPut(op.total);
  // Posted from the caller's list at once when nothing waits before it; copied only to wait.
  if (p.state == PeerState::State::kConnected && p.pending.empty() && !p.move.moving()) {
    if (PostPut(peer, p, op, pieces, count)) return;
    if (p.state != PeerState::State::kConnected) return;  // lost with the peer, reported by kPeerDown
  }
  op.pieces.assign(pieces, pieces + count);
  p.pending.push_back(std::move(op));
}

void PeerLines::Send(PeerId peer, const void* message, size_t bytes) {
  PeerState& p = (*peers_)[peer];
  if (p.state == PeerState::State::kConnected && p.pending.empty() && !p.move.moving()) {
    if (PostControl(peer, p, VerbsWireHeader::kMessage, 0, message, bytes, 0)) return;
    if (p.state != PeerState::State::kConnected) return;
  }
  Enqueue(peer, VerbsWireHeader::kMessage, 0, std::string(static_cast<const char*>(message), bytes), 0);
}

void PeerLines::Enqueue(PeerId peer, uint32_t type, uint64_t key, std::string payload, int rail) {
  PendingOp op;
  op.kind = PendingOp::Kind::kSend;
  op.type = type;
  op.key = key;
  op.payload = std::move(payload);
  op.rail = rail;
  (*peers_)[peer].pending.push_back(std::move(op));
  Flush(peer);
}

void PeerLines::Flush(PeerId peer) {
  PeerState& p = (*peers_)[peer];
  if (p.state != PeerState::State::kConnected) return;
  // In order: a peer's messages and puts may depend on each other (a credit after the data).
  // While the pair moves between services (pool/move_driver.h) only what the old service must
  // still carry goes: an op begun on it, and the move's notices; the rest waits for the new one.
  while (!p.pending.empty()) {
    PendingOp& op = p.pending.front();
    const bool held = p.move.HoldsLine();
    if (held && !op.started && !op.move_notice) return;
    if (!PostOp(peer, p, op)) return;
    if (p.state != PeerState::State::kConnected) return;  // posting failed and dropped the peer
    const bool last_notice = op.move_last;
    p.pending.pop_front();
    if (last_notice) p.move.NoticePosted(std::chrono::steady_clock::now());
  }
}

void PeerLines::Tend(std::chrono::steady_clock::time_point now) {
  if (now - last_keepalive_ >= kKeepaliveInterval) {
    last_keepalive_ = now;
    for (PeerId id = 0; id < peers_->size(); ++id) {
      const PeerState& p = (*peers_)[id];
      if (p.state != PeerState::State::kConnected || !p.pending.empty() || p.move.moving()) continue;
      for (size_t r = 0; r < p.rc.conns.size() && !p.pool.ud_service; ++r) {
        Enqueue(id, VerbsWireHeader::kKeepalive, 0, "", static_cast<int>(r));
      }
      if (p.pool.ud_service) Enqueue(id, VerbsWireHeader::kKeepalive, 0, "", 0);
    }
  }
  for (PeerId id = 0; id < peers_->size(); ++id) {
    if (!(*peers_)[id].pending.empty()) Flush(id);
  }
}

bool PeerLines::PostOp(PeerId peer, PeerState& p, PendingOp& op) {
  if (op.kind == PendingOp::Kind::kSend) {
    return PostControl(peer, p, op.type, op.key, op.payload.data(), op.payload.size(), op.rail);
  }
  return PostPut(peer, p, op, op.pieces.data(), op.pieces.size());
}

bool PeerLines::PostControl(PeerId peer, PeerState& p, uint32_t type, uint64_t key, const void* payload,
                            size_t bytes, int rail) {
  if (p.pool.ud_service) {
    if (!datagrams_->PostSend(peer, type, payload, bytes)) return false;
    if (type == VerbsWireHeader::kMessage) ++stats_->control_frames_sent;
    return true;
  }
  const size_t on = rail >= 0 && static_cast<size_t>(rail) < p.rc.conns.size() ? rail : 0;
  VerbsWireHeader h;
  h.type = type;
  h.key = key;
  h.last = true;
  const LocalPiece piece{payload, bytes};
  if (!rc_->Send(peer, p.rc, p.generation, on, h, &piece, 1, 0, bytes, InFlight{})) return false;
  if (type == VerbsWireHeader::kMessage) ++stats_->control_frames_sent;
  return true;
}

bool PeerLines::PostPut(PeerId peer, PeerState& p, PendingOp& op, const LocalPiece* pieces, size_t count) {
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

size_t PeerLines::PutRail(PeerState& p, uint64_t key, const LocalPiece* pieces, size_t count) {
  // One rail per remote region (a group's segment there): a group's puts to a peer land in the
  // order they were posted, which eager rounds rely on (a slot's round k put must not overtake
  // its round k-2 put), so the rail is chosen once and kept for the region's life. Chosen at
  // the first put, not at registration: a group registers its segment when its first rank
  // joins, but its rail tiers come with its segment placement, once every local rank has
  // joined (GroupRegistry), which its first put cannot precede (a round needs every local
  // rank's data). Groups with no tiers (no placement, or all rails equally near) spread over
  // the rails by key.
  auto [it, first] = p.rc.put_rails.try_emplace(key, 0);
  if (!first) return it->second;
  it->second = ChooseRail(count > 0 ? regions_->TiersAt(pieces[0].base) : RailTiers{}, p.rc.conns.size(), key);
  return it->second;
}

}  // namespace ohio
