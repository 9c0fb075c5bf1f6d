#include "shm/local_vector_plan.h"

#include "shm/vector_plan.h"

namespace ohio {

bool StagesVectorRow(const GroupShape& shape, const CountEntry* table, uint64_t region, uint64_t single_copy_bytes) {
  // Fits first: the row's sum cannot have wrapped around.
  return VectorRowFits(shape, table, region) && VectorRowBytes(shape, table) / shape.size() < single_copy_bytes;
}

void PlanStagedRowCopyIn(const GroupShape& shape, CountEntry* table, std::vector<CopySpan>* spans) {
  spans->clear();
  uint64_t at = 0;
  for (uint32_t r = 0; r < shape.size(); ++r) {
    CountEntry& e = table[r];
    if (e.bytes != 0) spans->push_back({e.displacement, at, e.bytes});
    e.displacement = at;
    at += e.bytes;
  }
}

VectorDisagreement FirstVectorDisagreement(const GroupShape& shape, const CountEntry* tables) {
  const NodeCounts counts{tables, shape.size()};
  for (uint32_t reader = 0; reader < shape.size(); ++reader) {
    const CountEntry* expects = counts.of(shape.local_index(reader));
    for (uint32_t source = 0; source < shape.size(); ++source) {
      const uint64_t sent = counts.of(shape.local_index(source))[reader].bytes;
      if (sent != expects[source].recv_bytes) return {true, source, reader, sent, expects[source].recv_bytes};
    }
  }
  return {};
}

}  // namespace ohio
