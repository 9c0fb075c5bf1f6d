// Alltoallv across nodes in several eager rounds, for a call whose part on some node does not
// fit one (shm/plan/vector_plan.h). Pure functions shared by the daemon and the ranks; as for one
// round, both ends of a node pair compute everything from their own node's count tables.
//
// The call's first round carries, in every node's header, its share of the count digest, whether
// its part fits, and the stream rounds its part needs, so the counts are checked before a rank
// copies a byte out and every node learns how many rounds follow (the most any node whose part
// did not fit needs). A node whose part fits puts it whole in the first round, as if the call
// were one round; a node whose part does not puts headers only, and its part in the stream
// rounds:
// - What rank a sends the ranks of node j, in their group order, zero counts taking no room, is
//   one stream; stream round s carries its bytes [s·slice, (s+1)·slice). The slice depends only
//   on the sending node's ppn and the buffers: a receiver knows it too, and knows the stream's
//   length from what its own ranks expect of a. A skewed pair takes as many rounds as its own
//   bytes need; an empty stream takes none.
// - Rank l of node n stages its stream to node j at l·region + j·slice of the round's SSB half:
//   every stream of the node fits a round side by side (slice ≤ region / N).
// - The block n puts to node j in a stream round is its ranks' chunks of their streams to j, in
//   local rank order, each as long as it is (slice ≤ (slot − header) / ppn: the block fits).
#pragma once

#include <cstdint>
#include <vector>

#include "shm/plan/copy_plan.h"
#include "shm/plan/eager_plan.h"
#include "shm/plan/exchange_plan.h"
#include "shm/plan/group_shape.h"
#include "shm/plan/vector_plan.h"

namespace ohio {

// Stream rounds a call may take: beyond, it is not served (the round numbers of one call must
// stay far from wrapping around).
constexpr uint64_t kMaxVectorStreamRounds = uint64_t{1} << 24;

// Bytes of each stream of a rank of `node` that one stream round carries (a cache-line multiple
// when at least 64; 0 when the buffers cannot hold a byte of every stream).
uint64_t VectorStreamSlice(const GroupShape& shape, const EagerLayout& layout, uint32_t node);

// Bytes of stream round `s` of a stream of `stream_bytes` cut in slices of `slice`.
uint64_t VectorStreamChunk(uint64_t stream_bytes, uint64_t slice, uint64_t s);

// Stream rounds the streams of `node`'s ranks need (0 if they send nothing); false if more than
// kMaxVectorStreamRounds (every count checked first: no sum wraps around).
bool VectorStreamRounds(const GroupShape& shape, const EagerLayout& layout, uint32_t node, const NodeCounts& counts,
                        uint64_t* rounds);

// What the verdict of an alltoallv's first round k says (SegmentHeader::vector_streamed of k's
// parity, written before its blocks are published): that some node's part streams (the first
// round carried its stream round 0), the stream rounds that follow the first, and whether this
// node's part is one of those that stream; or that the call goes again.
struct VectorStreams {
  bool any = false;
  uint32_t rounds = 0;
  bool own_staged = false;
  // The round carried nothing a rank reads: the call starts over in the next round
  // (kVectorCallGoesAgain, shm/plan/vector_cube.h).
  bool again = false;
};
VectorStreams VectorStreamsOf(uint64_t vector_streamed, uint32_t k);

// By node, whether its part of the call streams (else it came whole in the first round): this
// node's from `streams`, each other node's from the flags of its header in `srb_half`, the SRB
// half of the first round. All false, and nothing read, when no node streams.
void PlanStreamingNodes(const GroupShape& shape, const EagerLayout& layout, uint32_t node, const uint8_t* srb_half,
                        const VectorStreams& streams, std::vector<bool>* streaming);

// Copy-in of stream round `s` by a rank of `node` with these send counts and displacements: src
// into its send buffer, dst from the start of its region. `spans` is cleared first.
void PlanVectorStreamCopyIn(const GroupShape& shape, const EagerLayout& layout, uint32_t node, uint64_t s,
                            const size_t* send_counts, const size_t* send_displs, std::vector<CopySpan>* spans);

// This node's puts of stream round `s`, for a round of parity 0, one per other node in schedule
// order (as PlanVectorPuts); an empty chunk is no piece. Round 0 (the call's first) takes a
// rank's chunks from its whole row where the row fits its region.
void PlanVectorStreamPuts(const GroupShape& shape, uint32_t node, const EagerLayout& layout, const NodeCounts& counts,
                          uint64_t s, std::vector<Put>* puts);

// The deliveries stream round `s` brings to `node` (as PlanVectorDeliveries), bytes as this
// node expects them.
void PlanVectorStreamDeliveries(const GroupShape& shape, uint32_t node, const EagerLayout& layout,
                                const NodeCounts& counts, uint64_t s, std::vector<Delivery>* deliveries);

// Copy-out by local rank `local` of `node` of stream round `s`'s block from node `source`: src
// from the block's first byte (past the header), dst into the rank's receive buffer.
void PlanVectorStreamCopyOutBlock(const GroupShape& shape, uint32_t node, uint32_t local, const EagerLayout& layout,
                                  const NodeCounts& counts, uint32_t source, uint64_t s, const size_t* recv_displs,
                                  std::vector<CopySpan>* spans);

// Copy-out by local rank `local` of stream round `s`'s chunks of its own node's ranks' streams
// to their node: src from the start of the SSB half (round 0: from a rank's whole row where it
// fits its region), dst into its receive buffer.
void PlanVectorStreamCopyOutOnNode(const GroupShape& shape, uint32_t node, uint32_t local, const EagerLayout& layout,
                                  const NodeCounts& counts, uint64_t s, const size_t* recv_displs,
                                  std::vector<CopySpan>* spans);

}  // namespace ohio
