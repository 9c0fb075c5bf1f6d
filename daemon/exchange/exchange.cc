#include "daemon/exchange/exchange.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "shm/round_stamps.h"
#include "shm/plan/vector_plan.h"

namespace ohio {

Exchange::Exchange(const GroupShape& shape, uint32_t node, NodeLevelDesign algo, std::vector<std::string> node_names,
                   std::array<uint8_t, 16> key, uint64_t ssb_bytes, uint64_t srb_bytes, Transport* transport,
                   const Segment* segment, uint32_t tag, InterNodeTable internode_table)
    : s_(shape, node, algo, std::move(node_names), key, ssb_bytes, srb_bytes, transport, segment, tag,
         std::move(internode_table)),
      eager_round_(&s_),
      announced_round_(&s_),
      vector_round_(&s_, &vector_call_),
      verdict_(&s_, &vector_call_, &vector_round_),
      hypercube_round_(&s_, &verdict_),
      vector_cube_round_(&s_, &verdict_, &vector_call_) {}

void Exchange::SetPeer(uint32_t node, const PeerGroupInfo& info) {
  if (node == s_.node || node >= s_.peers.size()) return;
  if (!s_.peers[node]) ++s_.known_peers;
  s_.peers[node] = info;
  if (rank_gone_) s_.SendTo(node, *rank_gone_);
  s_.plan_ssb = std::min(s_.plan_ssb, info.ssb_bytes);
  s_.plan_srb = std::min(s_.plan_srb, info.srb_bytes);
  if (!bootstrapped()) return;
  // Where eager puts land depends on every node's buffers: only now can those that came
  // before be read.
  s_.layout = PlanEagerLayout(s_.shape, s_.plan_ssb, s_.plan_srb);
  vector_call_.plan = VectorRoundPlan{};  // planned for the layout before, if any
  hypercube_round_.ForgetPlan();
  vector_call_.cube_block_cap = VectorCubeBlockCap(s_.shape, s_.layout, s_.internode_table);
  for (const auto& [from, delivery] : early_) OnArrived(from, delivery);
  early_.clear();
}

std::optional<uint32_t> Exchange::NodeIndex(PeerId peer) const {
  auto it = std::find(s_.peer_ids.begin(), s_.peer_ids.end(), peer);
  if (it == s_.peer_ids.end()) return std::nullopt;
  return static_cast<uint32_t>(it - s_.peer_ids.begin());
}

RoundProtocol* Exchange::ChooseProtocol() {
  if (s_.vector && s_.hypercube()) return &vector_cube_round_;
  if (s_.eager && s_.vector) return &vector_round_;
  if (s_.hypercube()) return &hypercube_round_;
  if (s_.eager) return &eager_round_;
  return &announced_round_;
}

void Exchange::BeginRound(uint32_t round, uint64_t bytes_per_rank, bool local_disagree, bool local_opt_out,
                          uint64_t round_in_call) {
  s_.Begin(round, bytes_per_rank, local_disagree, local_opt_out);
  const bool local_ok = !local_disagree && !local_opt_out;
  s_.vector = bytes_per_rank == kVectorBytes;
  vector_call_.BeginRound(s_.vector ? static_cast<uint32_t>(round_in_call) : 0);
  if (s_.vector && local_ok) vector_round_.PlanPart();
  s_.eager = local_ok && (s_.vector ? !s_.too_large : FitsEager(s_.shape, s_.layout, bytes_per_rank));
  s_.internode = !local_ok  ? InterNodeAlgorithm::kPairwise
              : s_.vector ? vector_round_.ChooseInterNodeAlgorithm()
                          : RoundInterNodeAlgorithm(s_.shape, s_.algo, s_.layout, s_.internode_table, bytes_per_rank, s_.eager);
  protocol_ = ChooseProtocol();
  announced_round_.SetRoundInCall(round_in_call);
  protocol_->Plan();
  if (s_.eager) {
    WriteEagerHeader();
    // The SRB held a whole announced round: peers say when their ranks are through with it.
    if (s_.after_announced) s_.SendReady(false, false);
  }
  s_.put_posted.assign(s_.puts->size(), false);
  protocol_->Start();
  protocol_->ReactToMixedSigns();
  verdict_.Check();
}

void Exchange::WriteEagerHeader() {
  const uint32_t round = s_.round;
  // Before any of the round's blocks is published: where they land depends on it.
  s_.segment->header()->eager_internode[round & 1].store(EagerInterNodeWord(round, s_.internode), std::memory_order_relaxed);
  auto* h = reinterpret_cast<EagerHeader*>(s_.segment->header()->eager_out[round & 1]);
  const bool first = s_.vector && vector_call_.part == 0;
  *h = EagerHeader{kEagerHeaderMagic,
                   round,
                   s_.bytes_per_rank,
                   (first && !vector_call_.plan.fits ? kEagerVectorStaged : 0u) |
                       (first && vector_call_.cube_fits ? kEagerVectorCubeFits : 0u),
                   s_.node,
                   MonotonicNs(),
                   s_.count_digest,
                   first ? vector_call_.plan.stream_rounds : 0u,
                   0,
                   0,
                   {}};
}

void Exchange::EndRound() { s_.End(); }

void Exchange::TellRankGone(uint32_t rank, bool left) {
  ExchangeMessage m;
  m.type = ExchangeMessage::Type::kRankGone;
  m.delivery = rank;
  m.left = left;
  rank_gone_ = m;
  for (uint32_t node = 0; node < s_.shape.nodes(); ++node) {
    if (node != s_.node && s_.peers[node]) s_.SendTo(node, m);
  }
}

void Exchange::OnMessage(uint32_t from, const ExchangeMessage& m) {
  if (from == s_.node || from >= s_.shape.nodes()) return;
  if (m.type == ExchangeMessage::Type::kRoundReady && RoundAfter(m.round, s_.last_ready[from])) {
    s_.last_ready[from] = m.round;
  }
  if (!s_.Accept(from, m.round)) return;
  Heard& h = s_.HeardOf(from, m.round);
  if (m.type == ExchangeMessage::Type::kRoundReady) {
    h.known = true;
    h.bytes_per_rank = m.bytes_per_rank;
    h.disagree = m.sizes_disagree;
    h.opted_out = m.opted_out;
    h.too_large = m.delivery == ExchangeMessage::kReadyTooLarge;
    h.mixed = m.delivery == ExchangeMessage::kReadyMixed;
    if (s_.active && m.round == s_.round) {
      protocol_->ReactToMixedSigns();
      verdict_.Check();
    }
  } else {
    h.credit = std::max(h.credit, m.delivery + 1);
  }
}

void Exchange::OnArrived(uint32_t from, uint32_t delivery) {
  if (from == s_.node || from >= s_.shape.nodes()) return;
  if (!bootstrapped()) {
    // A peer that met every node before this one did may already be sending.
    early_.push_back({from, delivery});
    return;
  }
  if (IsBruckImm(delivery)) {
    OnHypercubeArrived(from, delivery & 1);
    return;
  }
  if (IsEagerImm(delivery)) {
    OnEagerHeader(from, delivery & 1);
    return;
  }
  if (!s_.active || s_.eager) return;
  announced_round_.OnArrived(delivery);
}

void Exchange::OnEagerHeader(uint32_t from, uint32_t parity) {
  // A node running this round pairwise while this one runs it as a hypercube: its M cannot
  // be this node's, and its header may be unreadable under hypercube inboxes.
  s_.pairwise_eager_seen[parity] = true;
  if (s_.active && s_.hypercube() && (s_.round & 1) == parity) protocol_->ReactToMixedSigns();
  EagerHeader h;
  std::memcpy(&h, s_.segment->srb() + EagerSlotOffset(s_.layout, s_.node, from, parity), sizeof(h));
  if (h.magic != kEagerHeaderMagic || (h.round & 1) != parity || h.source_node != from) return;
  if (!s_.Accept(from, h.round)) return;
  Heard& heard = s_.HearHeader(from, h);
  heard.count_digest = h.count_digest;
  heard.staged = (h.flags & kEagerVectorStaged) != 0;
  heard.cube_fits = (h.flags & kEagerVectorCubeFits) != 0;
  heard.stream_rounds = h.stream_rounds;
  heard.tables = heard.tables || (h.flags & kEagerVectorTables) != 0;
  if (s_.active && h.round == s_.round) verdict_.Check();
  if (s_.active && h.round == s_.round) protocol_->OnPeerHeader();
}

void Exchange::OnHypercubeArrived(uint32_t from, uint32_t parity) {
  const uint32_t k = BruckRoundFrom(s_.shape.nodes(), s_.node, from);
  if (k >= BruckRounds(s_.shape.nodes())) return;  // no step of the hypercube comes from there
  if (s_.active && s_.hypercube() && (s_.round & 1) == parity) {
    (s_.vector ? vector_cube_round_ : hypercube_round_).ReadInbox(k);
    return;
  }
  // The next round's (a sender finished this one first), or one of a round under way here
  // that does not run as a hypercube (the round fails: its nodes disagree on M).
  if (!s_.active || (s_.round & 1) != parity) s_.early_inboxes[parity] |= 1u << k;
}

void Exchange::OnPutDone(const DecodedPut& put) {
  uint32_t& n = s_.in_flight[put.parity];
  if (n > 0) --n;
}

void Exchange::ForgetPutsTo(PeerId peer) {
  // Which puts to it are still out is not tracked one by one: none of this group's will come
  // back, and the group fails with the connection.
  if (std::find(s_.peer_ids.begin(), s_.peer_ids.end(), peer) != s_.peer_ids.end()) s_.in_flight = {0, 0};
}

bool Exchange::Progress(uint32_t consumed_by_all) {
  if (!s_.active) return false;
  return protocol_->Progress(consumed_by_all);
}

}  // namespace ohio
