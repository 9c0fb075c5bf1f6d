// Alltoallv among nodes as a hypercube: the exchange of shm/plan/bruck_plan.h (XOR pairing among a
// power of two of nodes, the rotation otherwise), ceil(log2 N) messages per node and call instead
// of pairwise's N-1, for calls whose node-to-node blocks are small. Pure functions shared by the
// daemon and the ranks.
//
// An alltoallv's block from node s to node d holds the pieces s's ranks send d's ranks, laid as
// a pairwise vector round lays them (shm/plan/vector_plan.h): only s and d know its size, from their
// own count tables. A node that forwards it knows neither, so every message carries its blocks'
// sizes: step k's message is a header line (EagerHeader), a table of one uint32 per block (the
// indices j < N with bit k set, in increasing order: at most N/2; the table has N/2 entries),
// then the blocks in that order. Index j on node p after steps 0..k-1 is the block from
// BruckBehind(p, j mod 2^k) to BruckAhead(that node, j); the block from s ends at d under index
// j (d = BruckAhead(s, j)) in the step of j's highest bit, so the receiver finds it from the
// tables of its inboxes alone.
//
// The counts are checked as a pairwise vector round checks them, by the nodes' shares of the
// count digest summing to zero; here they are summed along the same messages: step k's header
// carries P, the sum of the shares of the 2^k nodes whose shares reached the sender (itself and
// those behind it), and a node adds each P it receives to its own. Among a power of two the last
// step's P completes the sum (recursive doubling). Otherwise it would count some nodes twice
// (the windows wrap around), so the last step's receiver, which lacks the r = N - 2^(K-1) nodes
// behind its sender, takes instead the sender's T: the sum over the window of (r mod 2^k) nodes
// ending at the sender, built along the same steps (VectorCubeInboxes::Tail). Once its last inbox
// has landed every node holds the whole sum. The same goes, by OR, for a "void" flag
// (kEagerVectorCubeVoid): a node whose part does not fit the hypercube
// (a row too long for its region of the SSB, or a block over the group's cap) sets it and sends
// headers only. A call whose sum is not zero or whose flag is set anywhere carried nothing
// any rank reads; it goes again, on every node alike, as a pairwise vector call, which names the
// pair that disagrees or stages what did not fit.
//
// Every block of a call is at most the cap (VectorCubeBlockCap), so every message fits its
// inbox (the SRB half cut as shm/plan/bruck_plan.h cuts it) whatever the counts.
//
// Step k's message goes to BruckAhead(node, 2^k) and comes from BruckSenderTo(node, k).
#pragma once

#include <cstdint>
#include <vector>

#include "shm/plan/bruck_plan.h"
#include "shm/plan/eager_plan.h"
#include "shm/plan/group_shape.h"
#include "shm/tables/internode_choice.h"

namespace ohio {

// Set in a hypercube alltoallv message's header: some node among those its partial sum covers
// cannot send its part as a hypercube. A header with it carries no table and no blocks.
constexpr uint32_t kEagerVectorCubeVoid = 8;
// Set in the header of a pairwise alltoallv's first round: the sending node's part of the call
// would have fit a hypercube. When every node's did, the group's next alltoallv tries one.
constexpr uint32_t kEagerVectorCubeFits = 16;

// Bytes of a step's header line and size table as a message carries them (cache lines).
uint64_t VectorCubeLineBytes(uint32_t nodes);

// The largest node-to-node block an alltoallv of this group may move as a hypercube: the
// largest block the inter-node table runs as one (for this N) that also lets the biggest message (N/2
// blocks behind a line) fit its inbox. 0 when the group's alltoallv never runs as a hypercube
// (the table runs none for this group, or the buffers allow no block). The same on every node.
uint64_t VectorCubeBlockCap(const GroupShape& shape, const EagerLayout& layout, const InterNodeTable& table);

// The blocks step k's message carries: the indices j < N with bit k set.
uint32_t VectorCubeBlocksInStep(uint32_t nodes, uint32_t k);
// Of those, the ones whose journey ends with step k (highest bit k): its first slots.
inline uint32_t VectorCubeFinalSlots(uint32_t nodes, uint32_t k) {
  const uint32_t low = 1u << k;
  return nodes <= low ? 0 : (nodes - low < low ? nodes - low : low);
}

// Position of index j (bit k set) in step k's message.
inline uint32_t VectorCubeSlot(uint32_t j, uint32_t k) {
  return (j >> (k + 1)) << k | (j & ((1u << k) - 1));
}
// The index at `slot` of step k's message.
inline uint32_t VectorCubeIndexAt(uint32_t slot, uint32_t k) {
  return (slot >> k) << (k + 1) | 1u << k | (slot & ((1u << k) - 1));
}

// What one node has learnt from the messages of one call: per inbox, the partial digest and
// void flag its header carried, and where each of its blocks starts.
class VectorCubeInboxes {
 public:
  // A call among `nodes`; inbox k lies at k x stride of the SRB half.
  void Reset(uint32_t nodes, uint64_t stride);
  // Inbox k's message landed at `inbox` (its header already checked: round, sender, M) with
  // `header`: false if its table says more than the inbox holds (a table is read only then).
  bool Land(uint32_t k, const EagerHeader& header, const uint8_t* inbox);
  bool landed(uint32_t k) const { return landed_[k]; }
  // What step k's header carries, from this node's own share and inboxes 0..k-1: P (the sum
  // over the 2^k nodes whose shares reached it) and T (over the window of r mod 2^k nodes ending
  // at this node, r = N - 2^(K-1)); the flag, ORed the same way.
  uint64_t Partial(uint32_t k, uint64_t own) const;
  uint64_t Tail(uint32_t k, uint64_t own) const;
  bool VoidBefore(uint32_t k, bool own) const;
  // Once every inbox has landed: the whole group's sum.
  uint64_t Total(uint64_t own) const;

  // Where index j lies when step k sends it (or, k = log2 N, once the call is over): in this
  // node's own SSB (own), or at `offset` of the SRB half, `bytes` long.
  struct Where {
    bool own = true;
    uint64_t offset = 0;
    uint64_t bytes = 0;
  };
  Where At(uint32_t j, uint32_t k) const;

 private:
  uint32_t nodes_ = 0;
  uint64_t stride_ = 0;
  std::vector<bool> landed_;
  std::vector<uint64_t> digests_;  // by inbox: its sender's P
  std::vector<uint64_t> tails_;    // and its T
  std::vector<bool> voids_;
  std::vector<std::vector<uint64_t>> starts_;  // by inbox: where each slot's block starts (N/2 + 1)
};

// Step k's message from `node` (its inboxes 0..k-1 landed): fills `table` (its first
// VectorCubeBlocksInStep entries of N/2) and
// names its blocks in order, own(dest) for a block of this node's own (own_bytes(dest) long),
// forwarded(offset, bytes) for one an inbox brought, at that offset of the SRB half.
template <typename OwnBytes, typename Own, typename Forwarded>
void PlanVectorCubeMessage(const VectorCubeInboxes& inboxes, uint32_t nodes, uint32_t node, uint32_t k,
                           uint32_t* table, OwnBytes own_bytes, Own own, Forwarded forwarded) {
  for (uint32_t slot = 0; slot < VectorCubeBlocksInStep(nodes, k); ++slot) {
    const uint32_t j = VectorCubeIndexAt(slot, k);
    const VectorCubeInboxes::Where where = inboxes.At(j, k);
    if (where.own) {
      const uint32_t dest = BruckAhead(nodes, node, j);
      table[slot] = static_cast<uint32_t>(own_bytes(dest));
      own(dest);
    } else {
      table[slot] = static_cast<uint32_t>(where.bytes);
      forwarded(where.offset, where.bytes);
    }
  }
}

// Where the block from each other node starts in `node`'s SRB half at `srb_half` once every
// inbox of a call that was not void has landed (offsets from the half's start, by source node;
// this node's own entry 0), read from the inboxes' tables. `offsets` is resized and filled.
void PlanVectorCubeArrivals(uint32_t nodes, uint32_t node, uint64_t stride, const uint8_t* srb_half,
                            std::vector<uint64_t>* offsets);

// Where each other node's block of an alltoallv round run by `internode` starts in `node`'s SRB
// half at `srb_half` once the round's blocks are published (offsets from the half's start, by
// source node): past the header of its slot (pairwise), or where the inboxes' tables put it
// (hypercube).
void PlanVectorBlockOffsets(const GroupShape& shape, const EagerLayout& layout, uint32_t node, InterNodeAlgorithm internode,
                            const uint8_t* srb_half, std::vector<uint64_t>* offsets);

}  // namespace ohio
