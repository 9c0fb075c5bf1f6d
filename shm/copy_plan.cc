#include "shm/copy_plan.h"

namespace ohio {
namespace {

void Append(std::vector<CopySpan>* spans, uint64_t src, uint64_t dst, uint64_t len) {
  if (len == 0) return;
  if (!spans->empty()) {
    CopySpan& last = spans->back();
    if (last.src + last.len == src && last.dst + last.len == dst) {
      last.len += len;
      return;
    }
  }
  spans->push_back({src, dst, len});
}

}  // namespace

uint64_t SsbBlockOffset(const GroupShape& shape, uint32_t node, uint32_t j, uint64_t slice) {
  return uint64_t{shape.ppn(node)} * shape.ranks_before(j) * slice;
}

uint64_t BlockBytes(const GroupShape& shape, uint32_t from, uint32_t to, uint64_t slice) {
  return uint64_t{shape.ppn(from)} * shape.ppn(to) * slice;
}

uint64_t SsbRoundBytes(const GroupShape& shape, uint32_t node, uint64_t slice) {
  return uint64_t{shape.ppn(node)} * shape.size() * slice;
}

uint64_t SsbOffset(const GroupShape& shape, Algorithm algo, uint32_t node, uint32_t l,
                   uint32_t dest, uint64_t slice) {
  if (algo == Algorithm::kV1) return (uint64_t{l} * shape.size() + dest) * slice;
  const uint32_t j = shape.node_of(dest);
  return SsbBlockOffset(shape, node, j, slice) +
         (uint64_t{l} * shape.ppn(j) + shape.local_index(dest)) * slice;
}

std::vector<CopySpan> PlanCopyIn(const GroupShape& shape, Algorithm algo, uint32_t node, uint32_t l,
                                 const Staging& staging, uint64_t round) {
  std::vector<CopySpan> spans;
  const uint64_t len = staging.length(round);
  const uint64_t off = staging.offset(round);
  const uint64_t m = staging.bytes_per_rank;
  if (algo == Algorithm::kV1) {
    for (uint32_t dest = 0; dest < shape.size(); ++dest) {
      Append(&spans, dest * m + off, SsbOffset(shape, algo, node, l, dest, len), len);
    }
    return spans;
  }
  // Walk destinations block by block so that the SSB side is sequential.
  for (uint32_t j = 0; j < shape.nodes(); ++j) {
    for (uint32_t i = 0; i < shape.ppn(j); ++i) {
      const uint32_t dest = shape.rank_at(j, i);
      Append(&spans, dest * m + off, SsbOffset(shape, algo, node, l, dest, len), len);
    }
  }
  return spans;
}

std::vector<CopySpan> PlanCopyOutLocal(const GroupShape& shape, Algorithm algo, uint32_t node,
                                       uint32_t r, const Staging& staging, uint64_t round) {
  std::vector<CopySpan> spans;
  const uint64_t len = staging.length(round);
  const uint64_t off = staging.offset(round);
  const uint32_t me = shape.rank_at(node, r);
  for (uint32_t l = 0; l < shape.ppn(node); ++l) {
    const uint32_t src_rank = shape.rank_at(node, l);
    Append(&spans, SsbOffset(shape, algo, node, l, me, len), src_rank * staging.bytes_per_rank + off,
           len);
  }
  return spans;
}

}  // namespace ohio
