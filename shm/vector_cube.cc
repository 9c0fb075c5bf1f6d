#include "shm/vector_cube.h"

#include <algorithm>
#include <cstring>

#include "shm/bruck_plan.h"
#include "shm/segment_layout.h"

namespace ohio {
namespace {

uint32_t HighestBit(uint32_t v) { return 31 - static_cast<uint32_t>(__builtin_clz(v)); }

const uint32_t* TableOf(const uint8_t* inbox) {
  return reinterpret_cast<const uint32_t*>(inbox + kEagerHeaderBytes);
}

}  // namespace

uint64_t VectorCubeLineBytes(uint32_t nodes) {
  return kEagerHeaderBytes + RoundUp(uint64_t{nodes / 2} * sizeof(uint32_t), kCacheLine);
}

uint64_t VectorCubeBlockCap(const GroupShape& shape, const EagerLayout& layout, const LeaderTable& table) {
  const uint32_t n = shape.nodes();
  if (n < 2 || (n & (n - 1)) != 0) return 0;
  // The table speaks of M per rank; a block is M x max ppn^2 (LeaderBlockBytes). Rows grow
  // with the block, so the largest M it runs as a hypercube gives the largest block.
  const uint64_t table_block = LeaderBlockBytes(shape, LargestHypercubeBytes(table, shape, uint64_t{1} << 40));
  const uint64_t stride = BruckInboxStride(n, layout.srb_half);
  const uint64_t line = VectorCubeLineBytes(n);
  if (stride <= line) return 0;
  // Every message carries N/2 blocks: at most the cap each, they fit behind the line.
  const uint64_t inbox_block = (stride - line) / (n / 2);
  // A table entry is a uint32.
  return std::min({table_block, inbox_block, uint64_t{UINT32_MAX}});
}

void VectorCubeInboxes::Reset(uint32_t nodes, uint64_t stride) {
  nodes_ = nodes;
  stride_ = stride;
  const uint32_t steps = BruckRounds(nodes);
  landed_.assign(steps, false);
  digests_.assign(steps, 0);
  voids_.assign(steps, false);
  starts_.resize(steps);
}

bool VectorCubeInboxes::Land(uint32_t k, const EagerHeader& header, const uint8_t* inbox) {
  landed_[k] = true;
  digests_[k] = header.count_digest;
  voids_[k] = (header.flags & kEagerVectorCubeVoid) != 0;
  if (voids_[k]) return true;
  // Each entry checked on its own and the sum against what is left: nothing wraps around.
  const uint64_t line = VectorCubeLineBytes(nodes_);
  const uint32_t* table = TableOf(inbox);
  std::vector<uint64_t>& starts = starts_[k];
  starts.resize(nodes_ / 2 + 1);
  uint64_t at = k * stride_ + line;
  const uint64_t end = (k + 1) * stride_;
  for (uint32_t slot = 0; slot < nodes_ / 2; ++slot) {
    starts[slot] = at;
    if (table[slot] > end - at) return false;
    at += table[slot];
  }
  starts[nodes_ / 2] = at;
  return true;
}

uint64_t VectorCubeInboxes::DigestBefore(uint32_t k, uint64_t own) const {
  for (uint32_t i = 0; i < k; ++i) own += digests_[i];
  return own;
}

bool VectorCubeInboxes::VoidBefore(uint32_t k, bool own) const {
  for (uint32_t i = 0; i < k; ++i) own = own || voids_[i];
  return own;
}

VectorCubeInboxes::Where VectorCubeInboxes::At(uint32_t j, uint32_t k) const {
  // The last step before k that moved index j: the highest of its bits below k.
  const uint32_t below = k >= 32 ? j : j & ((1u << k) - 1);
  if (below == 0) return Where{};
  const uint32_t inbox = HighestBit(below);
  const uint32_t slot = VectorCubeSlot(j, inbox);
  const std::vector<uint64_t>& starts = starts_[inbox];
  return Where{false, starts[slot], starts[slot + 1] - starts[slot]};
}

void PlanVectorCubeArrivals(uint32_t nodes, uint32_t node, uint64_t stride, const uint8_t* srb_half,
                            std::vector<uint64_t>* offsets) {
  offsets->assign(nodes, 0);
  const uint64_t line = VectorCubeLineBytes(nodes);
  for (uint32_t k = 0; k < BruckRounds(nodes); ++k) {
    // Step k ends the journey of the indices whose highest bit is k: the first 2^k slots.
    const uint32_t* table = TableOf(srb_half + k * stride);
    uint64_t at = k * stride + line;
    for (uint32_t slot = 0; slot < (1u << k); ++slot) {
      (*offsets)[node ^ VectorCubeIndexAt(slot, k)] = at;
      at += table[slot];
    }
  }
}

void PlanVectorBlockOffsets(const GroupShape& shape, const EagerLayout& layout, uint32_t node, Leader leader,
                            const uint8_t* srb_half, std::vector<uint64_t>* offsets) {
  const uint32_t n = shape.nodes();
  if (leader == Leader::kHypercube) {
    PlanVectorCubeArrivals(n, node, BruckInboxStride(n, layout.srb_half), srb_half, offsets);
    return;
  }
  offsets->assign(n, 0);
  for (uint32_t source = 0; source < n; ++source) {
    if (source != node) (*offsets)[source] = EagerSlotOffset(layout, node, source, 0) + kEagerHeaderBytes;
  }
}

}  // namespace ohio
