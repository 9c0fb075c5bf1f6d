#include "daemon/exchange/hypercube_round.h"

#include <cstring>
#include <utility>

#include "daemon/exchange/wire.h"

namespace ohio {

void HypercubeRound::Plan() {
  if (plan_.bytes_per_rank != s_.bytes_per_rank) {
    PlanCache& c = plan_;
    c = PlanCache{};
    c.bytes_per_rank = s_.bytes_per_rank;
    const uint64_t stride = BruckInboxStride(s_.shape.nodes(), s_.layout.srb_half);
    for (uint32_t k = 0; k < BruckRounds(s_.shape.nodes()); ++k) {
      const BruckMessage message = PlanBruckMessage(s_.shape, s_.bytes_per_rank, s_.node, k);
      Put p;
      p.dest = message.to;
      p.step = k;
      p.bytes = message.bytes;
      p.srb_offset = k * stride;
      c.puts.push_back(p);
      c.gathers.push_back(PlanBruckGather(s_.shape, s_.bytes_per_rank, s_.node, k, s_.layout.srb_half));
    }
    c.deliveries = PlanBruckDeliveries(s_.shape, s_.bytes_per_rank, s_.node, s_.layout.srb_half);
  }
  s_.puts = &plan_.puts;
  s_.deliveries = &plan_.deliveries;
}

void HypercubeRound::Start() {
  halted_ = false;
  inbox_landed_.assign(s_.puts->size(), false);
  inboxes_landed_ = inbox_prefix_ = 0;
  const uint32_t early = std::exchange(s_.early_inboxes[s_.round & 1], 0);
  for (uint32_t k = 0; k < s_.puts->size(); ++k) {
    if (early >> k & 1) ReadInbox(k);
  }
}

void HypercubeRound::Gather(uint32_t k, const uint8_t* ssb, const uint8_t* srb) {
  s_.pieces.clear();
  s_.pieces.push_back({s_.segment->header()->eager_out[s_.round & 1], kEagerHeaderBytes});
  for (const BruckPiece& piece : plan_.gathers[k]) {
    s_.pieces.push_back({(piece.forwarded ? srb : ssb) + piece.offset, piece.bytes});
  }
}

bool HypercubeRound::PostSteps() {
  bool changed = false;
  const uint32_t parity = s_.round & 1;
  const uint8_t* ssb = s_.segment->ssb() + parity * s_.layout.ssb_half;
  const uint8_t* srb = s_.segment->srb() + parity * s_.layout.srb_half;
  // Step k forwards what inboxes 0..k-1 brought.
  while (s_.posted < s_.puts->size() && s_.posted <= inbox_prefix_ && !halted_ && !s_.error) {
    const uint32_t k = s_.posted;
    const Put& p = (*s_.puts)[k];
    // After a round that used the whole SRB, the receiver says when its ranks are through.
    if (s_.after_announced && !RoundAtLeast(s_.last_ready[p.dest], s_.round)) break;
    Gather(k, ssb, srb);
    const PeerGroupInfo& peer = *s_.peers[p.dest];
    // An alltoallv's message carries a size table behind its header line.
    const uint32_t delivery = s_.vector ? VectorCubeImmDelivery(parity) : BruckImmDelivery(parity);
    s_.transport->Put(s_.peer_ids[p.dest], s_.pieces.data(), s_.pieces.size(), peer.srb_key,
                      peer.srb_offset + parity * s_.layout.srb_half + p.srb_offset, EncodeImm(peer.tag, delivery),
                      put_cookie::Make(s_.tag, s_.round, true, k, false, s_.vector));
    s_.put_posted[k] = true;
    ++s_.posted;
    ++s_.in_flight[parity];
    changed = true;
  }
  return changed;
}

void HypercubeRound::Publish() {
  while (s_.delivered < s_.deliveries->size() && inbox_landed_[(*s_.deliveries)[s_.delivered].step]) ++s_.delivered;
}

bool HypercubeRound::Progress(uint32_t) {
  const uint32_t before = s_.delivered;
  const bool changed = PostSteps();
  Publish();
  return changed || s_.delivered != before;
}

bool HypercubeRound::complete() const {
  // Its messages read inboxes the round after next overwrites: over once they have left.
  if (s_.in_flight[s_.round & 1] != 0) return false;
  return (s_.posted == s_.puts->size() && inboxes_landed_ == inbox_landed_.size()) || (s_.agreed && s_.error);
}

bool HypercubeRound::ReadInbox(uint32_t k) {
  if (inbox_landed_[k]) return false;
  const uint32_t n = s_.shape.nodes();
  const uint32_t from = BruckSenderTo(n, s_.node, k);
  const uint64_t at = (s_.round & 1) * s_.layout.srb_half + k * BruckInboxStride(n, s_.layout.srb_half);
  EagerHeader h;
  std::memcpy(&h, s_.segment->srb() + at, sizeof(h));
  // A message of a round that failed may land late: the round's own brings its own put.
  if (h.magic != kEagerHeaderMagic || h.round != s_.round || h.source_node != from) return false;
  s_.Accept(from, h.round);
  s_.HearHeader(from, h);
  if (h.bytes_per_rank != s_.bytes_per_rank || (h.flags & ~FlagsAllowed()) != 0) {
    // Its blocks are laid for another M: never published nor forwarded.
    ReactToMixedSigns();
    verdict_.Check();
    return false;
  }
  if (!Land(k, h, s_.segment->srb() + at)) return false;
  inbox_landed_[k] = true;
  ++inboxes_landed_;
  while (inbox_prefix_ < inbox_landed_.size() && inbox_landed_[inbox_prefix_]) ++inbox_prefix_;
  if (inboxes_landed_ == inbox_landed_.size()) AllLanded();
  return true;
}

bool HypercubeRound::MixedSign(uint32_t node) const {
  const Heard& h = s_.heard[node][s_.round & 1];
  return h.round == s_.round && h.known &&
         (h.bytes_per_rank != s_.bytes_per_rank || h.disagree || h.opted_out || h.too_large);
}

void HypercubeRound::ReactToMixedSigns() {
  if (!s_.active) return;
  bool asked = false, other_m = false;
  for (uint32_t n = 0; n < s_.shape.nodes(); ++n) {
    if (n == s_.node) continue;
    asked |= Asked(n);
    other_m |= MixedSign(n);
  }
  if (other_m) halted_ = true;  // the round fails whatever else comes
  if (s_.ready_sent) return;
  if (asked || other_m || s_.pairwise_eager_seen[s_.round & 1]) {
    s_.SendReady(false, false, ExchangeMessage::kReadyMixed);
  }
}

std::string HypercubeRound::Waiting() const {
  if (s_.ready_sent) return s_.Waiting(false);
  // A hypercube node hears only from its log2 N senders (BruckSenderTo).
  std::string missing;
  for (uint32_t k = 0; k < inbox_landed_.size(); ++k) {
    if (inbox_landed_[k]) continue;
    const uint32_t from = BruckSenderTo(s_.shape.nodes(), s_.node, k);
    missing += (missing.empty() ? "" : ",") + s_.node_names[from] + " (step " + std::to_string(k) + ")";
  }
  if (!missing.empty()) return "hypercube messages from node(s) " + missing;
  if (s_.posted < s_.puts->size()) return "credit to send to its peers";
  return "its own sends to complete";
}

}  // namespace ohio
