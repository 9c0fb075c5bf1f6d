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
  // Until the 32-node benchmark measures the crossovers: the hypercube for blocks of up to
  // 1 KiB from 4 nodes up, where log2 N messages undercut N-1.
  return LeaderTable{{LeaderRule{4, 1024, Leader::kHypercube}}};
}

Leader ChooseLeader(const LeaderTable& table, const GroupShape& shape, uint64_t bytes_per_rank) {
  const uint64_t block = bytes_per_rank * shape.max_ppn() * shape.max_ppn();
  for (const LeaderRule& r : table.rules) {
    if (shape.nodes() >= r.min_nodes && block <= r.max_block_bytes) return r.leader;
  }
  return Leader::kPairwise;
}

}  // namespace ohio
