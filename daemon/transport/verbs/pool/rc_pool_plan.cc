#include "daemon/transport/verbs/pool/rc_pool_plan.h"

#include <algorithm>

namespace ohio {

RcPoolPlan::RcPoolPlan(RcPoolOptions options) : options_(options) {}

void RcPoolPlan::AddPeer(PeerId peer) {
  if (peers_.count(peer) != 0) return;
  PeerState s;
  // Settled from the start: a new peer may enter at the first interval's end.
  s.since_move = options_.settle_intervals;
  if (options_.capacity == RcPoolOptions::kUnlimited) {
    s.rc = true;
    ++rc_peers_;
  }
  peers_.emplace(peer, s);
}

void RcPoolPlan::RemovePeer(PeerId peer) {
  auto it = peers_.find(peer);
  if (it == peers_.end()) return;
  if (it->second.rc) --rc_peers_;
  peers_.erase(it);
}

void RcPoolPlan::Place(PeerId peer, bool rc) {
  AddPeer(peer);
  PeerState& s = peers_[peer];
  if (s.rc == rc) return;
  s.rc = rc;
  s.since_move = 0;
  if (rc) {
    ++rc_peers_;
  } else {
    --rc_peers_;
  }
}

bool RcPoolPlan::InRc(PeerId peer) const {
  auto it = peers_.find(peer);
  return it != peers_.end() && it->second.rc;
}

double RcPoolPlan::Cost(PeerId peer) const {
  auto it = peers_.find(peer);
  return it == peers_.end() ? 0 : it->second.cost;
}

void RcPoolPlan::Move(PeerId peer, PeerState& s, bool to_rc, std::vector<RcPoolMove>* moves) {
  s.rc = to_rc;
  s.since_move = 0;
  if (to_rc) {
    ++rc_peers_;
    ++promotions_;
  } else {
    --rc_peers_;
    ++demotions_;
  }
  moves->push_back({peer, to_rc});
}

std::vector<RcPoolMove> RcPoolPlan::EndInterval(const std::vector<PeerTraffic>& traffic) {
  std::map<PeerId, double> datagrams;
  for (const PeerTraffic& t : traffic) {
    // On UD a put takes about a datagram per MTU of its bytes, and one more for a short tail.
    datagrams[t.peer] += static_cast<double>(t.puts) + static_cast<double>(t.bytes) / options_.mtu;
  }
  for (auto& [peer, s] : peers_) {
    auto it = datagrams.find(peer);
    const double now = it == datagrams.end() ? 0 : it->second;
    s.cost = options_.keep * s.cost + (1 - options_.keep) * now;
    s.idle = now > 0 ? 0 : s.idle + 1;
    if (s.since_move < UINT32_MAX) ++s.since_move;
  }
  std::vector<RcPoolMove> demoted, promoted;
  if (options_.capacity == 0 || options_.capacity == RcPoolOptions::kUnlimited) return {};
  auto settled = [&](const PeerState& s) { return s.since_move >= options_.settle_intervals; };
  auto moves_left = [&] { return demoted.size() + promoted.size() < options_.max_moves; };

  // Members that have sent nothing for long give their place back, when there are more peers
  // than places: with a place for every peer a move gains nothing and costs two handshakes.
  for (auto& [peer, s] : peers_) {
    if (!moves_left() || peers_.size() <= options_.capacity) break;
    if (s.rc && settled(s) && s.idle >= options_.idle_intervals) Move(peer, s, false, &demoted);
  }
  // Outsiders with traffic, the costliest first (lower peer first among equals: every run of
  // the plan on the same traffic decides alike).
  std::vector<PeerId> outsiders, members;
  for (const auto& [peer, s] : peers_) {
    if (!settled(s)) continue;
    if (!s.rc && s.cost > 0 && s.idle == 0) outsiders.push_back(peer);
    if (s.rc) members.push_back(peer);
  }
  auto costlier = [&](PeerId a, PeerId b) {
    const double ca = peers_[a].cost, cb = peers_[b].cost;
    return ca != cb ? ca > cb : a < b;
  };
  std::sort(outsiders.begin(), outsiders.end(), costlier);
  std::sort(members.begin(), members.end(), costlier);  // the cheapest last
  size_t next = 0;
  // While the pool has room, the costliest outsiders enter.
  for (; next < outsiders.size() && rc_peers_ < options_.capacity && moves_left(); ++next) {
    Move(outsiders[next], peers_[outsiders[next]], true, &promoted);
  }
  // Then an outsider displaces the cheapest member, if it costs displace_ratio times as much.
  while (next < outsiders.size() && !members.empty() && demoted.size() + promoted.size() + 2 <= options_.max_moves) {
    PeerState& in = peers_[members.back()];
    PeerState& out = peers_[outsiders[next]];
    if (out.cost <= options_.displace_ratio * in.cost) break;
    Move(members.back(), in, false, &demoted);
    Move(outsiders[next], out, true, &promoted);
    members.pop_back();
    ++next;
  }
  demoted.insert(demoted.end(), promoted.begin(), promoted.end());
  return demoted;
}

}  // namespace ohio
