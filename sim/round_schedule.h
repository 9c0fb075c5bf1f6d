// What each simulated daemon and rank does in each round of one call: the puts, deliveries and
// copies that ohio's own planners (shm/plan/) plan for the group's shape, buffers, inter-node
// table and M, as ohiod decides them (daemon/exchange/exchange.cc's BeginRound). Pure: no
// SimGrid, so the tests compare it, and what the simulation sends, with the planners directly.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "shm/plan/node_level_design.h"
#include "shm/plan/buffer_sizing.h"
#include "shm/plan/copy_plan.h"
#include "shm/plan/eager_plan.h"
#include "shm/plan/group_shape.h"
#include "shm/tables/internode_choice.h"
#include "shm/plan/staging.h"

namespace ohio::sim {

// What every daemon of the simulated group runs with (ohiod's settings of the same names).
struct GroupSettings {
  NodeLevelDesign algo = NodeLevelDesign::kV3;
  uint64_t ssb_bytes = kDefaultSsbBytes;
  uint64_t srb_bytes = kDefaultSrbBytes;
  uint64_t min_slice_bytes = kDefaultMinSliceBytes;
  InterNodeTable table = DefaultInterNodeTable();
};

// How a round runs among the nodes (daemon/exchange/: eager_round.h, announced_round.h,
// hypercube_round.h).
enum class RoundKind { kEager, kAnnounced, kHypercube };
const char* RoundKindName(RoundKind k);

// One message carrying ranks' data from this node's daemon.
struct SimPut {
  uint32_t dest = 0;
  // What the receiver knows the put by, to mark its deliveries landed: an announced round's
  // delivery index, an eager round's sender, a hypercube round's step (its inbox).
  uint32_t key = 0;
  uint32_t delivery = 0;  // announced: the receiver's delivery index (v3: the credit it needs)
  uint32_t step = 0;      // hypercube: sent once the inboxes of steps 0..step-1 have landed
  uint64_t payload = 0;   // the ranks' bytes, as the daemon's bytes_sent counts them
  uint64_t wire = 0;      // payload and the header line eager and hypercube messages carry
};

// One block landing in this node's SRB, in the order it is published to the ranks.
struct SimDelivery {
  uint32_t source = 0;
  uint32_t key = 0;  // landed once the put with this key from `source` has
  uint64_t bytes = 0;
};

// One node's part of one round.
struct NodeRound {
  RoundKind kind = RoundKind::kAnnounced;
  InterNodeAlgorithm internode = InterNodeAlgorithm::kPairwise;
  uint32_t window = 0;   // direct: the most puts in flight from the node at once (0: no bound)
  uint32_t granted = 0;  // announced: deliveries the node's ROUND_READY grants (v3: 2; v1/v2: all)
  std::vector<SimPut> puts;  // in the order the daemon posts them
  std::vector<SimDelivery> deliveries;
  std::vector<uint64_t> copy_in;                // bytes each local rank copies into the SSB
  std::vector<uint64_t> copy_on_node;           // ... out of the SSB, from its own node
  std::vector<std::vector<uint64_t>> copy_out;  // [delivery][local rank]: out of the SRB
  // Alltoallv: blocks are published only once every one has landed (the count digest is
  // checked over all of them first).
  bool publish_together = false;
};

// Bytes a copy plan moves.
uint64_t SpanBytes(const std::vector<CopySpan>& spans);

class VectorCallSchedule;

// One call of M bytes per rank pair on every node of the group.
class CallSchedule {
 public:
  // Errors: a group on one node (ohio serves it without daemons), buffers the planners refuse.
  static Result<std::shared_ptr<CallSchedule>> Make(const GroupShape& shape, const GroupSettings& settings,
                                                    uint64_t bytes_per_rank);
  // One alltoallv call (sim/vector_schedule.h).
  static std::shared_ptr<CallSchedule> Vector(std::shared_ptr<const VectorCallSchedule> vector);

  // The alltoallv's schedule, null for an alltoall.
  const VectorCallSchedule* vector() const { return vector_.get(); }

  uint64_t bytes_per_rank() const { return m_; }
  bool eager() const { return eager_; }
  InterNodeAlgorithm internode() const;
  uint64_t rounds() const;
  // Rounds per slice of the messages: the rounds of every full slice are alike.
  uint64_t rounds_per_slice() const { return vector_ ? 1 : uint64_t{staging_.step_groups} * staging_.row_parts; }
  uint64_t slices() const { return (rounds() + rounds_per_slice() - 1) / rounds_per_slice(); }
  const Staging& staging() const { return staging_; }
  // Node `node`'s part of round `round` (< rounds()). Planned at each call: what a simulation
  // keeps of it is its business (a large group's plans of every round would not fit memory).
  NodeRound Plan(uint32_t node, uint64_t round) const;

 private:
  CallSchedule(const GroupShape& shape, const GroupSettings& settings, uint64_t m)
      : shape_(shape), settings_(settings), m_(m) {}

  GroupShape shape_;
  GroupSettings settings_;
  uint64_t m_ = 0;
  uint64_t plan_srb_ = 0;
  EagerLayout layout_;
  bool eager_ = false;
  InterNodeAlgorithm internode_ = InterNodeAlgorithm::kPairwise;
  Staging staging_;
  std::shared_ptr<const VectorCallSchedule> vector_;
};

}  // namespace ohio::sim
