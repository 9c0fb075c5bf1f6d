#include "daemon/exchange/vector_round.h"

#include <string>

#include "daemon/exchange/wire.h"
#include "shm/plan/vector_disagreement.h"
#include "shm/plan/vector_staging.h"

namespace ohio {

void VectorRound::PlanPart() {
  if (call_.part == 0) {
    UpdateVectorRoundPlan(s_.shape, s_.node, s_.layout, s_.segment->count_table(0, s_.round), &call_.plan);
    s_.too_large = !call_.plan.stageable;
    s_.count_digest = call_.plan.digest;
    s_.puts = &call_.plan.puts;
    s_.deliveries = &call_.plan.deliveries;
    // Its puts are then one block per other node, from the regions of its ranks' rows.
    call_.cube_fits = call_.cube_block_cap != 0 && call_.plan.fits;
    for (const Put& p : call_.plan.puts) call_.cube_fits = call_.cube_fits && p.bytes <= call_.cube_block_cap;
    return;
  }
  // The counts the first round checked: the ranks write the same ones every round of a call.
  // Only the nodes whose part did not fit the first round stream it (round 0 went in the first
  // round); the others' puts carry the header alone.
  const NodeCounts counts{call_.plan.counts.data(), s_.shape.size()};
  PlanVectorStreamPuts(s_.shape, s_.node, s_.layout, counts, call_.part, &stream_puts_);
  if (!call_.staged_nodes[s_.node]) {
    for (Put& p : stream_puts_) {
      p.pieces.clear();
      p.bytes = 0;
    }
  }
  PlanVectorStreamDeliveries(s_.shape, s_.node, s_.layout, counts, call_.part, &stream_deliveries_);
  for (Delivery& d : stream_deliveries_) {
    if (!call_.staged_nodes[d.source]) d.bytes = 0;
  }
  s_.puts = &stream_puts_;
  s_.deliveries = &stream_deliveries_;
}

InterNodeAlgorithm VectorRound::ChooseInterNodeAlgorithm() const {
  return s_.eager && call_.part == 0 && call_.cube_next && call_.cube_block_cap != 0 ? InterNodeAlgorithm::kHypercube
                                                                                      : InterNodeAlgorithm::kPairwise;
}

bool VectorRound::Progress(uint32_t) {
  const uint32_t before = s_.delivered;
  bool changed = PostEager();
  changed = PostVectorTables() || changed;
  // Only once the counts are known to agree, or a rank would read pieces where its counts, not
  // the sender's, put them.
  if (s_.agreed && !s_.error && !call_.naming_pair) PublishLanded();
  return changed || s_.delivered != before;
}

void VectorRound::Verdict(const std::vector<uint32_t>& too_large, uint64_t digest_sum, bool staged,
                          uint32_t max_stream_rounds, bool all_cube_fit) {
  if (!too_large.empty()) {
    std::string nodes;
    for (uint32_t n : too_large) nodes += (nodes.empty() ? "" : ",") + s_.node_names[n];
    s_.error_code = Code::kNotSupported;
    s_.error = "alltoallv across nodes is served in at most " + std::to_string(kMaxVectorStreamRounds) +
               " rounds of the group's shared buffers; the part of node" + (too_large.size() > 1 ? "s " : " ") +
               nodes + " would take more";
    return;
  }
  // Every node's share is in: they sum to zero only if every pair of ranks agrees.
  if (digest_sum != 0) {
    if (VectorTablesFitSlots(s_.shape, s_.layout)) {
      call_.naming_pair = true;  // the round fails once the tables have named the pair
      return;
    }
    s_.error = "ranks disagree on the counts of this alltoallv: some rank sends another a number of bytes it does "
               "not expect (MPI's rule: sendcounts[j] on rank i equals recvcounts[i] on rank j)";
    return;
  }
  if (call_.part != 0) return;
  // Every node saw every node's flag: the next call tries the hypercube on all or on none.
  call_.cube_next = all_cube_fit;
  // Written for every first round, so that no word of a round 2^32 rounds back can pass for it.
  // This round carried stream round 0 of the parts that did not fit.
  const uint32_t streamed = staged && max_stream_rounds > 0 ? max_stream_rounds - 1 : 0;
  call_.rounds_in_call = 1 + streamed;
  const uint64_t own = call_.staged_nodes[s_.node] ? kVectorOwnPartStaged : 0;
  const uint64_t word = staged ? kVectorSomePartStreams | own | streamed : 0;
  s_.segment->header()->vector_streamed[s_.round & 1].store(uint64_t{s_.round} << 32 | word,
                                                            std::memory_order_relaxed);
}

bool VectorRound::PostVectorTables() {
  // They land over the block this round put in each peer's slot, and go with the header line
  // its puts gathered: only once those have left.
  if (!call_.naming_pair || call_.tables_posted || s_.posted != s_.puts->size() || s_.in_flight[s_.round & 1] != 0) {
    return false;
  }
  uint8_t* header = s_.segment->header()->eager_out[s_.round & 1];
  reinterpret_cast<EagerHeader*>(header)->flags |= kEagerVectorTables;
  const LocalPiece pieces[2] = {{header, kEagerHeaderBytes},
                                {s_.segment->count_table(0, s_.round), VectorTablesBytes(s_.shape, s_.node)}};
  for (uint32_t i = 0; i < s_.puts->size(); ++i) {
    const Put& p = (*s_.puts)[i];
    const PeerGroupInfo& peer = *s_.peers[p.dest];
    s_.transport->Put(s_.peer_ids[p.dest], pieces, 2, peer.srb_key,
                      peer.srb_offset + p.srb_offset + (s_.round & 1) * s_.layout.srb_half,
                      EncodeImm(peer.tag, VectorTablesImmDelivery(s_.round)),
                      put_cookie::Make(s_.tag, s_.round, true, i, true));
    ++s_.in_flight[s_.round & 1];
  }
  call_.tables_posted = true;
  NameVectorPair();
  return true;
}

void VectorRound::NameVectorPair() {
  if (!call_.naming_pair || !call_.tables_posted) return;
  for (uint32_t n = 0; n < s_.shape.nodes(); ++n) {
    if (n != s_.node && !s_.HeardOf(n, s_.round).tables) return;
  }
  const VectorDisagreement d = FirstVectorDisagreementOf(s_.shape, [&](uint32_t rank) {
    const uint32_t n = s_.shape.node_of(rank);
    const CountEntry* tables =
        n == s_.node ? s_.segment->count_table(0, s_.round)
                     : reinterpret_cast<const CountEntry*>(s_.segment->srb() +
                                                           EagerSlotOffset(s_.layout, s_.node, n, s_.round) +
                                                           kEagerHeaderBytes);
    return tables + uint64_t{s_.shape.local_index(rank)} * s_.shape.size();
  });
  call_.naming_pair = false;
  // The text a group on one node gives for the same tables; not found: the digests collided
  // (odds 2^-64), as on one node.
  s_.error = d.found ? VectorDisagreementText(d) : "the count digests of this alltoallv disagree but its tables agree";
}

}  // namespace ohio
