// Alltoallv of a group on one node, small calls: staged through the SSB so that the ranks meet
// once, as a small alltoall does (client/libohio/on_node_alltoallv.cc copies; these functions decide).
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
//   alltoall uses (client/libohio/single_copy.h); a larger row is read in place, one copy, and its owner
//   must then wait until every reader is through.
// - The counts are checked at the meeting, without a second one: every rank publishes its share
//   of the count digest (VectorRankDigest), and the shares sum to zero when every pair agrees.
//   When they do not, every rank looks for the first pair that disagrees in the same tables (all
//   of them are in this node's segment) and fails with the same text (shm/plan/vector_disagreement.h).
// - Before it arrives a rank goes over its counts twice, as an alltoall goes over its row once:
//   writing its table, which sums what deciding and checking need (WriteVectorRow), and staging
//   its pieces, copying each as its place is known (StageVectorRow). Zero counts copy nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "shm/plan/group_shape.h"
#include "shm/segment_layout.h"
#include "shm/plan/vector_disagreement.h"
#include "shm/plan/vector_plan.h"

namespace ohio {

// How a rank's row of a round lies (RoundEntry::row_staged).
enum class StagedRow : uint32_t {
  kNotStaged = 0,   // read in place from the rank's send buffer
  kPacked = 1,      // packed in the rank's region: the table has each piece's offset
  kPieceSlots = 2,  // the piece for rank r at piece slot r of the region
};

// Bytes of a piece slot in a region of `region` bytes (cache-line multiples).
uint64_t VectorPieceSlotBytes(const GroupShape& shape, uint64_t region);

// What a rank needs of its counts before it arrives, gathered while it writes its count table.
struct VectorRow {
  uint64_t bytes = 0;    // the row's sum (it may wrap around when a count is huge: see largest)
  uint64_t largest = 0;  // its largest count
  uint64_t digest = 0;   // its share of the count digest, VectorRankDigest of the table written
};

// Writes the count table of the group rank whose keys are `keys` (VectorPairKeysOf: bytes it sends
// each rank, at which displacement of its send buffer, bytes it expects of each) in one pass over
// its counts, and returns its row.
VectorRow WriteVectorRow(const GroupShape& shape, const VectorPairKeys* keys, const size_t* send_counts,
                         const size_t* send_displs, const size_t* recv_counts, CountEntry* table);

// Whether that row stages in a region of `region` bytes, given the mean block size from which a
// single copy is cheaper (`single_copy_bytes`).
bool StagesVectorRow(const GroupShape& shape, const VectorRow& row, uint64_t region, uint64_t single_copy_bytes);

// How a row that stages lies, with piece slots of `piece_slot` bytes (VectorPieceSlotBytes).
inline StagedRow StagedRowOf(const VectorRow& row, uint64_t piece_slot) {
  return row.largest <= piece_slot ? StagedRow::kPieceSlots : StagedRow::kPacked;
}

// Copy-in of a staged row laid out as `how`, in one pass over its table: copy(src, dst, len) for
// each piece of a non-zero count, src into the send buffer (the table's displacements as
// WriteVectorRow wrote them), dst from the start of the region; every displacement of `table` is
// rewritten to where its piece lies in the region.
template <typename Copy>
void StageVectorRow(const GroupShape& shape, uint64_t piece_slot, StagedRow how, CountEntry* table, Copy copy) {
  uint64_t at = 0;
  for (uint32_t r = 0; r < shape.size(); ++r) {
    CountEntry& e = table[r];
    if (how == StagedRow::kPieceSlots) at = r * piece_slot;
    if (e.bytes != 0) copy(e.displacement, at, e.bytes);
    e.displacement = at;
    at += e.bytes;
  }
}

}  // namespace ohio
