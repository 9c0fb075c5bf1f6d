#include "shm/plan/eager_plan.h"

#include "shm/plan/bruck_plan.h"
#include "shm/plan/copy_plan.h"
#include "shm/plan/staging.h"

namespace ohio {

EagerLayout PlanEagerLayout(const GroupShape& shape, uint64_t ssb_bytes, uint64_t srb_bytes) {
  EagerLayout l;
  l.ssb_half = LocalSsbHalfBytes(ssb_bytes);
  // A slot is its share of the SRB half for the block, and a header line on top (the segment
  // holds the lines besides srb_bytes, SrbHeaderRoomBytes): a block of a power of two, as
  // large as that share, fits one slot instead of missing it by its header.
  const uint64_t sources = shape.nodes() > 1 ? shape.nodes() - 1 : 1;
  const uint64_t block = SrbHalfBytes(srb_bytes) / sources;
  l.slot = block - block % 64 + kEagerHeaderBytes;
  l.srb_half = sources * l.slot;
  return l;
}

bool FitsEager(const GroupShape& shape, const EagerLayout& layout, uint64_t m) {
  if (layout.slot < kEagerHeaderBytes) return false;
  const uint64_t max_ppn = shape.max_ppn();
  // Divisions, not products: M may be anything a caller passes.
  if (m > 0 && (layout.slot - kEagerHeaderBytes) / (max_ppn * max_ppn) < m) return false;
  return m == 0 || layout.ssb_half / (max_ppn * uint64_t{shape.size()}) >= m;
}

uint64_t EagerSlotOffset(const EagerLayout& layout, uint32_t receiver, uint32_t source, uint32_t parity) {
  const uint32_t index = source < receiver ? source : source - 1;
  return (parity & 1) * layout.srb_half + uint64_t{index} * layout.slot;
}

std::vector<Put> PlanEagerPuts(const GroupShape& shape, NodeLevelDesign algo, uint32_t node, const EagerLayout& layout,
                               uint64_t m) {
  // One round carrying all of M: the rendezvous planner's puts for a slice of M, re-aimed at
  // the slots.
  std::vector<Put> puts = PlanPuts(shape, algo == NodeLevelDesign::kV1 ? algo : NodeLevelDesign::kV2, node, m, ~uint64_t{0});
  for (uint32_t i = 0; i < puts.size(); ++i) {
    puts[i].delivery = EagerImmDelivery(0);
    puts[i].srb_offset = EagerSlotOffset(layout, puts[i].dest, node, 0);
  }
  return puts;
}

std::vector<Delivery> PlanEagerDeliveries(const GroupShape& shape, uint32_t node, const EagerLayout& layout,
                                          uint64_t m) {
  std::vector<Delivery> out;
  const auto steps = PairwiseSchedule(shape.nodes(), node);
  for (uint32_t s = 0; s < steps.size(); ++s) {
    Delivery d;
    d.source = steps[s].recv_from;
    d.step = s;
    d.bytes = BlockBytes(shape, d.source, node, m);
    d.srb_offset = EagerSlotOffset(layout, node, d.source, 0) + kEagerHeaderBytes;
    out.push_back(d);
  }
  return out;
}

RoundInterNodeChoice ExplainRoundInterNodeAlgorithm(const GroupShape& shape, NodeLevelDesign algo, const EagerLayout& layout,
                                     const InterNodeTable& table, uint64_t m, bool eager) {
  RoundInterNodeChoice c;
  c.table = c.runs = ChooseInterNodeAlgorithm(table, shape, m);
  if (c.table != InterNodeAlgorithm::kHypercube) return c;
  // v1 keeps each rank's row as it is in the SSB: a node's block for another is not one range
  // there, which the hypercube's gather of own blocks assumes.
  c.miss = !eager                                              ? HypercubeMiss::kNotEager
           : algo == NodeLevelDesign::kV1                            ? HypercubeMiss::kV1Layout
           : !FitsBruck(shape, m, layout.srb_half, layout.ssb_half) ? HypercubeMiss::kInboxTooSmall
                                                                    : HypercubeMiss::kNone;
  if (c.miss != HypercubeMiss::kNone) c.runs = InterNodeAlgorithm::kPairwise;
  return c;
}

InterNodeAlgorithm RoundInterNodeAlgorithm(const GroupShape& shape, NodeLevelDesign algo, const EagerLayout& layout, const InterNodeTable& table,
                   uint64_t m, bool eager) {
  return ExplainRoundInterNodeAlgorithm(shape, algo, layout, table, m, eager).runs;
}

std::vector<Delivery> PlanEagerRoundDeliveries(const GroupShape& shape, uint32_t node, const EagerLayout& layout,
                                               uint64_t m, InterNodeAlgorithm internode) {
  if (internode != InterNodeAlgorithm::kHypercube) return PlanEagerDeliveries(shape, node, layout, m);
  return PlanBruckDeliveries(shape, m, node, layout.srb_half);
}

}  // namespace ohio
