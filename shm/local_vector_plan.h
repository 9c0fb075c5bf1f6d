// Alltoallv of a group on one node, small calls: staged through the SSB so that the ranks meet
// once, as a small alltoall does (client/local_alltoallv.cc copies; these functions decide).
//
// - Each local rank owns an equal region of the round's SSB half (VectorRegionBytes, as across
//   nodes), cut into one equal piece slot per rank of the group. A row whose every count fits a
//   piece slot puts the piece for rank r at slot r: its reader finds it without looking at the
//   sender's table (one cache miss less per sender; the digest has checked the size). Any other
//   row that fits the region is packed there in group-rank order, zero counts taking no room.
//   Either way the count table says where each piece lies: for a staged row,
//   CountEntry::displacement is the piece's offset in the region, not in the send buffer.
// - Each rank decides for itself, by its own counts, whether it stages (and says so in its slot):
//   a row stages when it fits its region and its mean block is below the single-copy switch that
//   alltoall uses (client/single_copy.h); a larger row is read in place, one copy, and its owner
//   must then wait until every reader is through.
// - The counts are checked at the meeting, without a second one: every rank publishes its share
//   of the count digest (VectorRankDigest), and the shares sum to zero when every pair agrees.
//   When they do not, every rank looks for the first pair that disagrees in the same tables (all
//   of them are in this node's segment) and fails with the same text (shm/vector_disagreement.h).
#pragma once

#include <cstdint>
#include <vector>

#include "shm/copy_plan.h"
#include "shm/group_shape.h"
#include "shm/segment_layout.h"
#include "shm/vector_disagreement.h"

namespace ohio {

// How a rank's row of a round lies (RoundEntry::row_staged).
enum class StagedRow : uint32_t {
  kNotStaged = 0,   // read in place from the rank's send buffer
  kPacked = 1,      // packed in the rank's region: the table has each piece's offset
  kPieceSlots = 2,  // the piece for rank r at piece slot r of the region
};

// Bytes of a piece slot in a region of `region` bytes (cache-line multiples).
uint64_t VectorPieceSlotBytes(const GroupShape& shape, uint64_t region);

// Whether the rank whose send table is `table` stages its row in a region of `region` bytes,
// given the mean block size from which a single copy is cheaper (`single_copy_bytes`).
bool StagesVectorRow(const GroupShape& shape, const CountEntry* table, uint64_t region, uint64_t single_copy_bytes);

// Copy-in of a row that StagesVectorRow stages in a region of `region` bytes: src into the
// send buffer (the table's displacements as the caller wrote them), dst from the start of the
// region. Rewrites every displacement of `table` to where the piece lies in the region, and
// returns how the row lies. `spans` is cleared first.
StagedRow PlanStagedRowCopyIn(const GroupShape& shape, uint64_t region, CountEntry* table,
                              std::vector<CopySpan>* spans);

}  // namespace ohio
