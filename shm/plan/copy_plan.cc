#include "shm/plan/copy_plan.h"

#include <algorithm>

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

// The node a round covering some steps reaches first: its columns come first.
uint32_t FirstReached(const GroupShape& shape, uint32_t node, const RoundCover& cover) {
  return static_cast<uint32_t>((uint64_t{node} + cover.first_step) % shape.nodes());
}

// Steps of such a round, never more than the group's nodes.
uint32_t EndStep(const GroupShape& shape, const RoundCover& cover) {
  return cover.end_step < shape.nodes() ? cover.end_step : shape.nodes();
}

// Where node j's columns start in one of `node`'s rows: ranks of the nodes laid before it.
uint64_t ColumnBase(const GroupShape& shape, uint32_t node, const RoundCover& cover, uint32_t j) {
  if (cover.every_step(shape.nodes())) return shape.ranks_before(j);
  const uint32_t a = FirstReached(shape, node, cover);
  return (uint64_t{shape.ranks_before(j)} + shape.size() - shape.ranks_before(a)) % shape.size();
}

}  // namespace

bool Reaches(const GroupShape& shape, uint32_t node, const RoundCover& cover, uint32_t j) {
  if (cover.every_step(shape.nodes())) return true;
  const uint32_t t = (j + shape.nodes() - node) % shape.nodes();
  return t >= cover.first_step && t < EndStep(shape, cover);
}

uint64_t CoverColumns(const GroupShape& shape, uint32_t node, const RoundCover& cover) {
  const uint32_t end = EndStep(shape, cover);
  if (cover.every_step(shape.nodes()) || end - cover.first_step >= shape.nodes()) return shape.size();
  if (end <= cover.first_step) return 0;
  // The nodes reached are consecutive (mod N): so are their columns.
  const uint32_t a = FirstReached(shape, node, cover);
  const uint32_t e = static_cast<uint32_t>((uint64_t{a} + end - cover.first_step) % shape.nodes());
  return (uint64_t{shape.ranks_before(e)} + shape.size() - shape.ranks_before(a)) % shape.size();
}

uint64_t SsbBlockOffset(const GroupShape& shape, uint32_t node, uint32_t j, const RoundCover& cover) {
  return cover.rows(shape.ppn(node)) * ColumnBase(shape, node, cover, j) * cover.length;
}

uint64_t BlockBytes(const GroupShape& shape, uint32_t from, uint32_t to, const RoundCover& cover) {
  return uint64_t{cover.rows(shape.ppn(from))} * shape.ppn(to) * cover.length;
}

uint64_t SsbRoundBytes(const GroupShape& shape, uint32_t node, const RoundCover& cover) {
  return cover.rows(shape.ppn(node)) * CoverColumns(shape, node, cover) * cover.length;
}

uint64_t SsbOffset(const GroupShape& shape, NodeLevelDesign algo, uint32_t node, uint32_t l, uint32_t dest,
                   const RoundCover& cover) {
  const uint64_t row = l - cover.first_row;
  const uint32_t j = shape.node_of(dest);
  if (algo == NodeLevelDesign::kV1) {
    if (cover.every_step(shape.nodes())) return (row * shape.size() + dest) * cover.length;
    return (row * CoverColumns(shape, node, cover) + ColumnBase(shape, node, cover, j) + shape.local_index(dest)) *
           cover.length;
  }
  return SsbBlockOffset(shape, node, j, cover) + (row * shape.ppn(j) + shape.local_index(dest)) * cover.length;
}

std::vector<CopySpan> PlanCopyIn(const GroupShape& shape, NodeLevelDesign algo, uint32_t node, uint32_t l,
                                 const Staging& staging, uint64_t round) {
  std::vector<CopySpan> spans;
  const RoundCover cover = staging.cover(round);
  if (!cover.has_row(l)) return spans;
  const uint64_t m = staging.bytes_per_rank;
  auto copy = [&](uint32_t dest) {
    Append(&spans, dest * m + cover.offset, SsbOffset(shape, algo, node, l, dest, cover), cover.length);
  };
  if (!cover.every_step(shape.nodes())) {
    // Nodes in step order: the SSB side is sequential whatever the design.
    for (uint32_t t = cover.first_step; t < EndStep(shape, cover); ++t) {
      const uint32_t j = static_cast<uint32_t>((uint64_t{node} + t) % shape.nodes());
      for (uint32_t i = 0; i < shape.ppn(j); ++i) copy(shape.rank_at(j, i));
    }
    return spans;
  }
  if (algo == NodeLevelDesign::kV1) {
    for (uint32_t dest = 0; dest < shape.size(); ++dest) copy(dest);
    return spans;
  }
  // Walk destinations block by block so that the SSB side is sequential.
  for (uint32_t j = 0; j < shape.nodes(); ++j) {
    for (uint32_t i = 0; i < shape.ppn(j); ++i) copy(shape.rank_at(j, i));
  }
  return spans;
}

std::vector<CopySpan> PlanCopyOutOnNode(const GroupShape& shape, NodeLevelDesign algo, uint32_t node,
                                       uint32_t r, const Staging& staging, uint64_t round) {
  std::vector<CopySpan> spans;
  const RoundCover cover = staging.cover(round);
  if (!Reaches(shape, node, cover, node)) return spans;
  const uint32_t me = shape.rank_at(node, r);
  const uint32_t end = std::min(cover.end_row, shape.ppn(node));
  for (uint32_t l = cover.first_row; l < end; ++l) {
    const uint32_t src_rank = shape.rank_at(node, l);
    Append(&spans, SsbOffset(shape, algo, node, l, me, cover), src_rank * staging.bytes_per_rank + cover.offset,
           cover.length);
  }
  return spans;
}

}  // namespace ohio
