// Which inter-node algorithm the daemons of a group run among nodes for a call of M bytes per rank
// (as Sur, Jin and Panda propose: a hypercube for tiny blocks, pairwise in between, direct for
// large ones). Pure:
// every node of a group computes the same choice from the same table, the same shape and the
// same M, so the choice itself never travels.
#pragma once

#include <cstdint>
#include <vector>

#include "shm/plan/group_shape.h"

namespace ohio {

enum class InterNodeAlgorithm {
  kPairwise,   // one block per other node, in the pairwise schedule (the first version's only one)
  kHypercube,  // ceil(log2 N) messages per node, blocks forwarded (shm/plan/bruck_plan.h)
  kDirect,     // every put posted at once behind a window that bounds incast
};

const char* InterNodeAlgorithmName(InterNodeAlgorithm l);

// One row: calls of groups of `min_nodes` to `max_nodes` nodes whose largest node-to-node block
// (M x max ppn x max ppn) is at most `max_block_bytes` run `internode`. The first row that
// matches wins; none matching means pairwise. Its text form: shm/tables/internode_table_text.h.
struct InterNodeRule {
  uint32_t min_nodes = 2;
  uint64_t max_block_bytes = 0;
  InterNodeAlgorithm internode = InterNodeAlgorithm::kPairwise;
  uint32_t max_nodes = UINT32_MAX;
  bool simulated = false;  // proposed by ohio-sim, not measured (shm/tables/table_words.h)
};

struct InterNodeTable {
  std::vector<InterNodeRule> rules;
  // Direct: the most puts a node has in flight at once. Puts follow the pairwise schedule, in
  // which each step's receivers are all different, so no node receives more than about this
  // many at once (incast), whatever N. Sender-side only: nodes need not agree on it (ohiod's
  // direct-window setting, not part of the table's text or digest).
  uint32_t direct_window = 4;
};

// The table ohiod runs when its configuration names none.
InterNodeTable DefaultInterNodeTable();

// The block a row's max_block_bytes is compared with: M x max ppn x max ppn.
uint64_t InterNodeBlockBytes(const GroupShape& shape, uint64_t bytes_per_rank);

// The index of the first row matching, or -1 when none does (pairwise): what
// `ohio-plan --explain` names as the reason of a choice.
int MatchingInterNodeRule(const InterNodeTable& table, uint32_t nodes, uint64_t block_bytes);

InterNodeAlgorithm ChooseInterNodeAlgorithm(const InterNodeTable& table, const GroupShape& shape, uint64_t bytes_per_rank);

// The largest M of `up_to`, `up_to` / 2, `up_to` / 4, ... that `table` runs as a hypercube on
// `shape`, 0 if none: what a group sized for calls of up to `up_to` bytes per rank should also
// hold the hypercube's inboxes for (the table's rows grow with the block, so the largest wins).
uint64_t LargestHypercubeBytes(const InterNodeTable& table, const GroupShape& shape, uint64_t up_to);

}  // namespace ohio
