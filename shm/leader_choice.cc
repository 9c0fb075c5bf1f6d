#include "shm/leader_choice.h"

namespace ohio {

const char* LeaderName(Leader l) {
  switch (l) {
    case Leader::kPairwise:
      return "pairwise";
    case Leader::kHypercube:
      return "hypercube";
    case Leader::kDirect:
      return "direct";
  }
  return "?";
}

LeaderTable DefaultLeaderTable() {
  // Measured at 16 emulated nodes x 1 rank (docs/PERFORMANCE.md, "Leader algorithms"): the
  // hypercube beats pairwise up to blocks of 4 KiB, loses from 8 KiB; from 4 nodes up, where
  // log2 N messages undercut N-1. At 32 namespaces x 1 beside Open MPI it beat pairwise and
  // direct at every size measured (1 B-16 KiB); at 16 x 2 it led up to 2 KiB, tied with them at
  // 4 KiB and lost from 8 KiB (docs/PERFORMANCE.md, "On a quiet box"): the row stands.
  return LeaderTable{{LeaderRule{4, 4096, Leader::kHypercube}}};
}

uint64_t LeaderBlockBytes(const GroupShape& shape, uint64_t bytes_per_rank) {
  return bytes_per_rank * shape.max_ppn() * shape.max_ppn();
}

int MatchingLeaderRule(const LeaderTable& table, uint32_t nodes, uint64_t block_bytes) {
  for (size_t i = 0; i < table.rules.size(); ++i) {
    const LeaderRule& r = table.rules[i];
    if (nodes >= r.min_nodes && nodes <= r.max_nodes && block_bytes <= r.max_block_bytes) return static_cast<int>(i);
  }
  return -1;
}

Leader ChooseLeader(const LeaderTable& table, const GroupShape& shape, uint64_t bytes_per_rank) {
  const int row = MatchingLeaderRule(table, shape.nodes(), LeaderBlockBytes(shape, bytes_per_rank));
  return row < 0 ? Leader::kPairwise : table.rules[row].leader;
}

uint64_t LargestHypercubeBytes(const LeaderTable& table, const GroupShape& shape, uint64_t up_to) {
  for (uint64_t m = up_to; m > 0; m /= 2) {
    if (ChooseLeader(table, shape, m) == Leader::kHypercube) return m;
  }
  return 0;
}

}  // namespace ohio
