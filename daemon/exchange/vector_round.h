// Alltoallv rounds (M = kVectorBytes, shm/plan/vector_plan.h) are eager rounds whose puts and
// deliveries are planned from this node's count tables when the call's first round begins (and
// kept while the counts stay the same: a loop of alltoallv calls plans once); its header
// carries the node's share of the count digest and, when the node's part does not fit one
// round, kEagerVectorStaged and the stream rounds its part needs. Blocks are published only once
// every node's share is in and they sum to zero: a pair that disagrees fails the round on every
// node before any rank copies a block out: each node then puts its count tables over its block
// in every peer's slot, and the round fails once all are in, on every node naming the same
// first pair that disagrees (shm/plan/vector_disagreement.h). A node whose part did not fit sent
// its stream round 0; the others sent their whole part. If any did not fit, the call goes on in
// as many stream rounds as the most those nodes need, less the first (shm/plan/vector_staging.h),
// planned from the first round's counts, in which only they put data; the ranks learn how many
// from the segment (vector_streamed), and which nodes stream from the headers in their SRB. A
// node whose part would take more than kMaxVectorStreamRounds sends ROUND_READY
// (kReadyTooLarge) instead, and the call is not supported on any node.
#pragma once

#include <cstdint>
#include <vector>

#include "daemon/exchange/eager_round.h"
#include "daemon/exchange/vector_call.h"

namespace ohio {

class VectorRound : public EagerRound {
 public:
  VectorRound(RoundState* state, VectorCall* call) : EagerRound(state), call_(*call) {}

  // Plans this node's part of the alltoallv round under way, before the round knows whether it
  // is eager or how it runs: the first round of a call from the count tables, a stream round
  // from the counts the first one checked.
  void PlanPart();
  // PlanPart aimed the puts and deliveries already.
  void Plan() override {}
  bool Progress(uint32_t consumed_by_all) override;
  std::string Waiting() const override { return s_.Waiting(call_.naming_pair && call_.tables_posted); }
  void OnPeerHeader() override { NameVectorPair(); }

  // The inter-node algorithm of the round: only a call's first round, which checks the counts,
  // may run as a hypercube; the stream rounds that may follow a pairwise one are pairwise too.
  InterNodeAlgorithm ChooseInterNodeAlgorithm() const;
  // The verdict of an alltoallv round whose nodes all passed it: which nodes' parts would take
  // too many rounds, whether the count digests sum to zero, and (the call's first round) how
  // many stream rounds follow: `max_stream_rounds` - 1 if any node's part is `staged` (the first
  // round carried stream round 0).
  void Verdict(const std::vector<uint32_t>& too_large, uint64_t digest_sum, bool staged, uint32_t max_stream_rounds,
               bool all_cube_fit);

 private:
  // The digest failed: puts this node's count tables to every peer once the round's puts have
  // left; then, once every node's are in, names the first pair that disagrees.
  bool PostVectorTables();
  void NameVectorPair();

  VectorCall& call_;
  std::vector<Put> stream_puts_;  // the stream round under way
  std::vector<Delivery> stream_deliveries_;
};

}  // namespace ohio
