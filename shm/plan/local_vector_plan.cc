#include "shm/plan/local_vector_plan.h"

namespace ohio {

uint64_t VectorPieceSlotBytes(const GroupShape& shape, uint64_t region) {
  const uint64_t slot = region / shape.size();
  return slot - slot % 64;
}

VectorRow WriteVectorRow(const GroupShape& shape, const VectorPairKeys* keys, const size_t* send_counts,
                         const size_t* send_displs, const size_t* recv_counts, CountEntry* table) {
  VectorRow row;
  for (uint32_t r = 0; r < shape.size(); ++r) {
    const uint64_t sent = send_counts[r];
    const uint64_t expected = recv_counts[r];
    table[r] = CountEntry{sent, send_displs[r], expected};
    row.bytes += sent;
    if (sent > row.largest) row.largest = sent;
    row.digest += VectorPairDigest(keys[r], sent, expected);
  }
  return row;
}

bool StagesVectorRow(const GroupShape& shape, const VectorRow& row, uint64_t region, uint64_t single_copy_bytes) {
  // The largest count first: when every count fits the region, their sum cannot have wrapped
  // around (a group's ranks times a region's bytes is far below 2^64).
  if (row.largest > region || row.bytes > region) return false;
  // The mean below the switch, bytes / size < switch, is bytes < switch * size: no division in a
  // call of a few hundred cycles. A product past 2^64 is above any row that fits.
  uint64_t switch_row = 0;
  if (__builtin_mul_overflow(single_copy_bytes, uint64_t{shape.size()}, &switch_row)) return true;
  return row.bytes < switch_row;
}

}  // namespace ohio
