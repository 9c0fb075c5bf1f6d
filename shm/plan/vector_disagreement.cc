#include "shm/plan/vector_disagreement.h"

namespace ohio {

VectorDisagreement FirstVectorDisagreement(const GroupShape& shape, const CountEntry* tables) {
  return FirstVectorDisagreementOf(
      shape, [&](uint32_t rank) { return tables + uint64_t{shape.local_index(rank)} * shape.size(); });
}

std::string VectorDisagreementText(const VectorDisagreement& d) {
  return "rank " + std::to_string(d.source) + " sends " + std::to_string(d.sent) + " bytes to rank " +
         std::to_string(d.reader) + ", which expects " + std::to_string(d.expected) + " from it";
}

uint64_t VectorTablesBytes(const GroupShape& shape, uint32_t node) {
  return uint64_t{shape.ppn(node)} * CountTableBytes(shape.size());
}

bool VectorTablesFitSlots(const GroupShape& shape, const EagerLayout& layout) {
  return layout.slot >= kEagerHeaderBytes &&
         uint64_t{shape.max_ppn()} * CountTableBytes(shape.size()) <= layout.slot - kEagerHeaderBytes;
}

}  // namespace ohio
