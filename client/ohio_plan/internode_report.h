// `ohio-plan --explain`: the inter-node table, which row it picks for a group and M and why, and
// what each inter-node algorithm would cost a node per call (messages, the steps they take one
// after another, bytes sent), computed with the planners ohiod runs (shm/tables/internode_choice.h,
// shm/plan/bruck_plan.h). Pure, like plan_report.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "shm/plan/node_level_design.h"
#include "shm/plan/buffer_sizing.h"
#include "shm/plan/eager_plan.h"
#include "shm/tables/internode_choice.h"

namespace ohio {

struct InterNodeCost {
  InterNodeAlgorithm internode = InterNodeAlgorithm::kPairwise;
  uint64_t messages = 0;  // messages (frames) a node sends per call, each one put
  uint64_t steps = 0;     // how many of them wait for the one before (pairwise: each; direct: none)
  uint64_t bytes = 0;     // bytes a node sends, forwarded blocks included (maximum over the nodes)
};

// The group's node-level algorithm and buffers (the smallest of its nodes'): whether a round is
// eager and the hypercube fits it depends on them.
struct InterNodeBuffers {
  NodeLevelDesign algo = NodeLevelDesign::kV3;
  uint64_t ssb_bytes = kDefaultSsbBytes;
  uint64_t srb_bytes = kDefaultSrbBytes;
};

struct InterNodeExplanation {
  std::vector<uint32_t> ppn;
  uint64_t bytes_per_rank = 0;
  InterNodeBuffers buffers;
  uint64_t block_bytes = 0;  // what the table's max-block is compared with
  int row = -1;              // the row that matched, -1 for none (pairwise)
  // The table's choice, what the daemons run (pairwise where the table's hypercube does not
  // fit the round) and why: shm/plan/eager_plan.h's ExplainRoundInterNodeAlgorithm, as the daemon decides.
  RoundInterNodeChoice choice;
  std::vector<InterNodeCost> costs;  // pairwise, hypercube, direct
  // Alltoallv: the largest node-to-node block its first round carries as a hypercube, 0 when it
  // never runs one (shm/plan/vector_cube.h's VectorCubeBlockCap).
  uint64_t vector_cube_cap = 0;
};

Result<InterNodeExplanation> ExplainInterNodeAlgorithm(const InterNodeTable& table, const std::vector<uint32_t>& ppn,
                                        uint64_t bytes_per_rank, const InterNodeBuffers& buffers = {});

// The table (with `source` and its digest), the choice for the request and its reason (and,
// where the table's choice does not fit the round, what runs instead), the costs, and a sweep
// of M by powers of 4 up to 16 MiB showing where what runs changes.
std::string RenderInterNodeExplanation(const InterNodeTable& table, const std::string& source,
                                    const InterNodeExplanation& e);

}  // namespace ohio
