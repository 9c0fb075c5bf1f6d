// What each simulated daemon and rank does in each round of one alltoallv call, from ohio's own
// vector planners (shm/plan/vector_plan.h, vector_staging.h, vector_cube.h) as ohiod runs them
// (daemon/exchange/vector_round.cc, vector_cube_round.cc):
// - the call's first round is a hypercube when the group's previous alltoallv left every node's
//   part fitting one (a group's first alltoallv tries it) and the inter-node table runs hypercubes
//   for the group; its messages carry their blocks' size tables, or headers only from a node
//   whose part (or an inbox's) is void, and then the call carries nothing and goes again:
// - pairwise, one eager round of one put per node pair, or, when some node's part does not fit,
//   stream round 0 of those parts in it and as many stream rounds after it as the most such a
//   node needs, in which the others put headers only.
// Pure: no SimGrid. The counts are a consistent matrix (the digest sums to zero).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "shm/plan/vector_plan.h"
#include "sim/count_matrix.h"
#include "sim/round_schedule.h"

namespace ohio::sim {

class VectorCallSchedule {
 public:
  // `tries_cube`: the group's previous alltoallv left every node's part fitting a hypercube (true
  // for its first). Errors: a matrix not of the group's size, a part beyond the stream rounds
  // ohiod serves.
  static Result<std::shared_ptr<VectorCallSchedule>> Make(const GroupShape& shape, const GroupSettings& settings,
                                                          const CountMatrix& counts, bool tries_cube);

  // The call's rounds: the hypercube attempt (if any, and only it when it carried the call),
  // then the pairwise first round and its stream rounds.
  uint64_t rounds() const { return (cube_ ? 1 : 0) + (cube_ && !cube_again_ ? 0 : pairwise_rounds_); }
  // The first round's algorithm.
  InterNodeAlgorithm internode() const { return cube_ ? InterNodeAlgorithm::kHypercube : InterNodeAlgorithm::kPairwise; }
  bool cube_went_again() const { return cube_ && cube_again_; }
  // Whether the group's next alltoallv tries the hypercube (the same on every node).
  bool next_tries_cube() const { return next_tries_cube_; }
  // Stream rounds after the pairwise first round (0: every node's part fitted it).
  uint32_t stream_rounds() const { return pairwise_rounds_ - 1; }
  NodeRound Plan(uint32_t node, uint64_t round) const;

 private:
  VectorCallSchedule(const GroupShape& shape, const GroupSettings& settings) : shape_(shape), settings_(settings) {}
  NodeCounts CountsOf(uint32_t node) const { return NodeCounts{tables_[node].data(), shape_.size()}; }
  NodeRound PlanCube(uint32_t node) const;
  NodeRound PlanPairwise(uint32_t node, uint32_t part) const;
  // Step k's payload from `node`: its blocks, own and forwarded, as the size table lists them.
  uint64_t CubeMessageBytes(uint32_t node, uint32_t k) const;
  // A rank's copy-in of a first round (its row, or stream round 0 when it does not fit its region).
  uint64_t FirstCopyIn(uint32_t node, uint32_t local) const;

  GroupShape shape_;
  GroupSettings settings_;
  EagerLayout layout_;
  std::vector<std::vector<CountEntry>> tables_;  // by node: its ranks' count tables, as in the segment
  std::vector<std::vector<size_t>> send_counts_, send_displs_, recv_displs_;  // by rank, packed buffers
  std::vector<VectorRoundPlan> plans_;         // by node: its pairwise first round
  std::vector<bool> staged_;                    // by node: its part streams
  uint32_t pairwise_rounds_ = 1;
  bool cube_ = false;
  bool cube_again_ = false;
  bool next_tries_cube_ = true;
  std::vector<std::vector<bool>> cube_void_;  // [node][k]: step k's message is headers only
};

}  // namespace ohio::sim
