// Where every byte of a round goes: offsets into the SSB for each (local rank, destination)
// pair, and the memcpy lists a rank runs to copy in and copy out. Pure functions; adjacent
// pieces are merged, so a rank whose destinations are laid out contiguously does one copy.
#pragma once

#include <cstdint>
#include <vector>

#include "shm/plan/node_level_design.h"
#include "shm/plan/group_shape.h"
#include "shm/plan/staging.h"

namespace ohio {

struct CopySpan {
  uint64_t src = 0;
  uint64_t dst = 0;
  uint64_t len = 0;
  bool operator==(const CopySpan& o) const { return src == o.src && dst == o.dst && len == o.len; }
};

// Offset in node `node`'s SSB, for a round covering `cover`, of the bytes that the node's
// local rank `l` (a row the round carries) sends to group rank `dest` (on a node it reaches).
// A round covering every step:
//   v1:     rows as the ranks' send buffers are: [l][dest]
//   v2, v3: block per destination node j, rows inside: [j][l][local index of dest]
// A round covering some steps lays the nodes it reaches in step order, each node's ranks by
// local index: v1 [l][node][local index], v2/v3 [node][l][local index].
uint64_t SsbOffset(const GroupShape& shape, NodeLevelDesign algo, uint32_t node, uint32_t l, uint32_t dest,
                   const RoundCover& cover);
inline uint64_t SsbOffset(const GroupShape& shape, NodeLevelDesign algo, uint32_t node, uint32_t l, uint32_t dest,
                          uint64_t slice) {
  return SsbOffset(shape, algo, node, l, dest, WholeCover(slice));
}

// Whether a round covering `cover` takes node `node`'s messages to node j.
bool Reaches(const GroupShape& shape, uint32_t node, const RoundCover& cover, uint32_t j);
// Destination ranks in one of node `node`'s rows of such a round.
uint64_t CoverColumns(const GroupShape& shape, uint32_t node, const RoundCover& cover);

// Offset and length of block j (everything node `node` sends to node j) in a coalesced SSB.
uint64_t SsbBlockOffset(const GroupShape& shape, uint32_t node, uint32_t j, const RoundCover& cover);
inline uint64_t SsbBlockOffset(const GroupShape& shape, uint32_t node, uint32_t j, uint64_t slice) {
  return SsbBlockOffset(shape, node, j, WholeCover(slice));
}
uint64_t BlockBytes(const GroupShape& shape, uint32_t from, uint32_t to, const RoundCover& cover);
inline uint64_t BlockBytes(const GroupShape& shape, uint32_t from, uint32_t to, uint64_t slice) {
  return BlockBytes(shape, from, to, WholeCover(slice));
}

// Bytes of SSB a round occupies on `node`.
uint64_t SsbRoundBytes(const GroupShape& shape, uint32_t node, const RoundCover& cover);
inline uint64_t SsbRoundBytes(const GroupShape& shape, uint32_t node, uint64_t slice) {
  return SsbRoundBytes(shape, node, WholeCover(slice));
}

// Copy-in of round `round` by local rank l of `node`: src is an offset into the rank's send
// buffer (P messages of M bytes), dst an offset into the SSB. Empty for a row the round does
// not carry.
std::vector<CopySpan> PlanCopyIn(const GroupShape& shape, NodeLevelDesign algo, uint32_t node, uint32_t l,
                                 const Staging& staging, uint64_t round);

// Copy-out, by local rank r of `node`, of what the node's own ranks sent it: src is an offset
// into the SSB, dst an offset into the rank's receive buffer. Intra-node data never leaves
// the SSB. Empty for a round that does not cover step 0.
std::vector<CopySpan> PlanCopyOutOnNode(const GroupShape& shape, NodeLevelDesign algo, uint32_t node,
                                       uint32_t r, const Staging& staging, uint64_t round);

}  // namespace ohio
