#include "shm/plan/leader_choice.h"

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
  // Measured beside Open MPI with 100-200 timed calls per size
  // (docs/investigations/leader-table.md): at 32 emulated nodes x 1 rank the hypercube beat
  // pairwise and direct at every block up to 16 KiB (0.54-1.04x Open MPI against 1.25-1.60x);
  // at 16 x 2 it led up to blocks of 8 KiB (M = 2 KiB), tied at 16-32 KiB and lost at 64 KiB.
  // From 4 nodes up, where log2 N messages undercut N-1.
  return LeaderTable{{LeaderRule{32, 16384, Leader::kHypercube}, LeaderRule{4, 8192, Leader::kHypercube}}};
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
