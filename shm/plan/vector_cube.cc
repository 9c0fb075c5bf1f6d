#include "shm/plan/vector_cube.h"

#include <algorithm>
#include <cstring>

#include "shm/plan/bruck_plan.h"
#include "shm/segment_layout.h"

namespace ohio {
namespace {

uint32_t HighestBit(uint32_t v) { return 31 - static_cast<uint32_t>(__builtin_clz(v)); }

const uint32_t* TableOf(const uint8_t* inbox) {
  return reinterpret_cast<const uint32_t*>(inbox + kEagerHeaderBytes);
}

}  // namespace

uint32_t VectorCubeBlocksInStep(uint32_t nodes, uint32_t k) {
  // Of 0..N-1, each full period of 2^(k+1) holds 2^k with bit k set, the last partial one the
  // rest beyond 2^k.
  const uint64_t period = uint64_t{2} << k;
  const uint64_t full = nodes / period * (period / 2);
  const uint64_t rest = nodes % period;
  return static_cast<uint32_t>(full + (rest > period / 2 ? rest - period / 2 : 0));
}

uint64_t VectorCubeLineBytes(uint32_t nodes) {
  return kEagerHeaderBytes + RoundUp(uint64_t{nodes / 2} * sizeof(uint32_t), kCacheLine);
}

uint64_t VectorCubeBlockCap(const GroupShape& shape, const EagerLayout& layout, const InterNodeTable& table) {
  const uint32_t n = shape.nodes();
  if (n < 2) return 0;
  // The table speaks of M per rank; a block is M x max ppn^2 (InterNodeBlockBytes). Rows grow
  // with the block, so the largest M it runs as a hypercube gives the largest block.
  const uint64_t table_block = InterNodeBlockBytes(shape, LargestHypercubeBytes(table, shape, uint64_t{1} << 40));
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
  tails_.assign(steps, 0);
  voids_.assign(steps, false);
  starts_.resize(steps);
}

bool VectorCubeInboxes::Land(uint32_t k, const EagerHeader& header, const uint8_t* inbox) {
  landed_[k] = true;
  digests_[k] = header.count_digest;
  tails_[k] = header.count_digest_tail;
  voids_[k] = (header.flags & kEagerVectorCubeVoid) != 0;
  if (voids_[k]) return true;
  // Each entry checked on its own and the sum against what is left: nothing wraps around.
  const uint64_t line = VectorCubeLineBytes(nodes_);
  const uint32_t* table = TableOf(inbox);
  std::vector<uint64_t>& starts = starts_[k];
  const uint32_t blocks = VectorCubeBlocksInStep(nodes_, k);
  starts.resize(blocks + 1);
  uint64_t at = k * stride_ + line;
  const uint64_t end = (k + 1) * stride_;
  for (uint32_t slot = 0; slot < blocks; ++slot) {
    starts[slot] = at;
    if (table[slot] > end - at) return false;
    at += table[slot];
  }
  starts[blocks] = at;
  return true;
}

uint64_t VectorCubeInboxes::Partial(uint32_t k, uint64_t own) const {
  for (uint32_t i = 0; i < k; ++i) own += digests_[i];
  return own;
}

uint64_t VectorCubeInboxes::Tail(uint32_t k, uint64_t own) const {
  // The window of (r mod 2^k) nodes ending here: if bit k-1 of r is set, this node's P of step
  // k-1 (2^(k-1) nodes) and the T its sender of step k-1 sent (the rest, ending 2^(k-1) behind);
  // else the same window as for step k-1.
  const uint32_t steps = static_cast<uint32_t>(landed_.size());
  const uint32_t r = steps == 0 ? 0 : nodes_ - (1u << (steps - 1));
  uint64_t tail = 0;
  for (uint32_t i = 0; i < k; ++i) {
    if ((r >> i) & 1) tail = Partial(i, own) + tails_[i];
  }
  return tail;
}

uint64_t VectorCubeInboxes::Total(uint64_t own) const {
  const uint32_t steps = static_cast<uint32_t>(landed_.size());
  if (steps == 0) return own;
  // Among a power of two the last sender's P is exactly the half this node lacks; otherwise its
  // P would overlap this node's, and its T is the window this node lacks.
  const bool power_of_two = (nodes_ & (nodes_ - 1)) == 0;
  return Partial(steps - 1, own) + (power_of_two ? digests_[steps - 1] : tails_[steps - 1]);
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
    // Step k ends the journey of the indices whose highest bit is k: its first slots.
    const uint32_t* table = TableOf(srb_half + k * stride);
    uint64_t at = k * stride + line;
    for (uint32_t slot = 0; slot < VectorCubeFinalSlots(nodes, k); ++slot) {
      (*offsets)[BruckBehind(nodes, node, VectorCubeIndexAt(slot, k))] = at;
      at += table[slot];
    }
  }
}

void PlanVectorBlockOffsets(const GroupShape& shape, const EagerLayout& layout, uint32_t node, InterNodeAlgorithm internode,
                            const uint8_t* srb_half, std::vector<uint64_t>* offsets) {
  const uint32_t n = shape.nodes();
  if (internode == InterNodeAlgorithm::kHypercube) {
    PlanVectorCubeArrivals(n, node, BruckInboxStride(n, layout.srb_half), srb_half, offsets);
    return;
  }
  offsets->assign(n, 0);
  for (uint32_t source = 0; source < n; ++source) {
    if (source != node) (*offsets)[source] = EagerSlotOffset(layout, node, source, 0) + kEagerHeaderBytes;
  }
}

}  // namespace ohio
