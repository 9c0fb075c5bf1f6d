#include "shm/tables/internode_choice.h"

namespace ohio {

const char* InterNodeAlgorithmName(InterNodeAlgorithm l) {
  switch (l) {
    case InterNodeAlgorithm::kPairwise:
      return "pairwise";
    case InterNodeAlgorithm::kHypercube:
      return "hypercube";
    case InterNodeAlgorithm::kDirect:
      return "direct";
  }
  return "?";
}

InterNodeTable DefaultInterNodeTable() {
  // Measured beside Open MPI with 100-200 timed calls per size
  // (docs/investigations/internode-table.md has the figures): at 32 emulated nodes x 1 rank the
  // hypercube beat pairwise and direct at every block up to 16 KiB; at 16 x 2 it led up to
  // blocks of 8 KiB (M = 2 KiB), tied at 16-32 KiB and lost at 64 KiB. From 4 nodes up, where
  // log2 N messages undercut N-1.
  return InterNodeTable{{InterNodeRule{32, 16384, InterNodeAlgorithm::kHypercube}, InterNodeRule{4, 8192, InterNodeAlgorithm::kHypercube}}};
}

uint64_t InterNodeBlockBytes(const GroupShape& shape, uint64_t bytes_per_rank) {
  return bytes_per_rank * shape.max_ppn() * shape.max_ppn();
}

int MatchingInterNodeRule(const InterNodeTable& table, uint32_t nodes, uint64_t block_bytes) {
  for (size_t i = 0; i < table.rules.size(); ++i) {
    const InterNodeRule& r = table.rules[i];
    if (nodes >= r.min_nodes && nodes <= r.max_nodes && block_bytes <= r.max_block_bytes) return static_cast<int>(i);
  }
  return -1;
}

InterNodeAlgorithm ChooseInterNodeAlgorithm(const InterNodeTable& table, const GroupShape& shape, uint64_t bytes_per_rank) {
  const int row = MatchingInterNodeRule(table, shape.nodes(), InterNodeBlockBytes(shape, bytes_per_rank));
  return row < 0 ? InterNodeAlgorithm::kPairwise : table.rules[row].internode;
}

uint64_t LargestHypercubeBytes(const InterNodeTable& table, const GroupShape& shape, uint64_t up_to) {
  for (uint64_t m = up_to; m > 0; m /= 2) {
    if (ChooseInterNodeAlgorithm(table, shape, m) == InterNodeAlgorithm::kHypercube) return m;
  }
  return 0;
}

}  // namespace ohio
