#include "shm/local_vector_plan.h"

#include "shm/vector_plan.h"

namespace ohio {

bool StagesVectorRow(const GroupShape& shape, const CountEntry* table, uint64_t region, uint64_t single_copy_bytes) {
  // Fits first: the row's sum cannot have wrapped around.
  return VectorRowFits(shape, table, region) && VectorRowBytes(shape, table) / shape.size() < single_copy_bytes;
}

uint64_t VectorPieceSlotBytes(const GroupShape& shape, uint64_t region) {
  const uint64_t slot = region / shape.size();
  return slot - slot % 64;
}

StagedRow PlanStagedRowCopyIn(const GroupShape& shape, uint64_t region, CountEntry* table,
                              std::vector<CopySpan>* spans) {
  const uint64_t slot = VectorPieceSlotBytes(shape, region);
  bool slotted = true;
  for (uint32_t r = 0; r < shape.size() && slotted; ++r) slotted = table[r].bytes <= slot;
  spans->clear();
  uint64_t at = 0;
  for (uint32_t r = 0; r < shape.size(); ++r) {
    CountEntry& e = table[r];
    if (slotted) at = r * slot;
    if (e.bytes != 0) spans->push_back({e.displacement, at, e.bytes});
    e.displacement = at;
    at += e.bytes;
  }
  return slotted ? StagedRow::kPieceSlots : StagedRow::kPacked;
}

}  // namespace ohio
