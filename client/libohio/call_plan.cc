#include "client/libohio/call_plan.h"

#include <cstring>

namespace ohio {
namespace {

// Span lists are planned at the round's own offset; stored as if it were 0.
void ShiftUserSide(std::vector<CopySpan>* spans, uint64_t offset, bool user_is_src) {
  for (CopySpan& s : *spans) (user_is_src ? s.src : s.dst) -= offset;
}

}  // namespace

void CopyIn(const CallPlan& plan, uint64_t round, const uint8_t* send, uint8_t* ssb) {
  const uint8_t* src = send + plan.staging.offset(round);
  for (const CopySpan& s : plan.copy_in[plan.Kind(round)]) std::memcpy(ssb + s.dst, src + s.src, s.len);
}

void CopyOutOnNode(const CallPlan& plan, uint64_t round, const uint8_t* ssb, uint8_t* recv) {
  uint8_t* dst = recv + plan.staging.offset(round);
  for (const CopySpan& s : plan.copy_out_on_node[plan.Kind(round)]) std::memcpy(dst + s.dst, ssb + s.src, s.len);
}

CallPlan MakeCallPlan(const GroupShape& shape, NodeLevelDesign algo, uint32_t node, uint32_t l, const Staging& staging) {
  CallPlan p;
  p.bytes_per_rank = staging.bytes_per_rank;
  p.staging = staging;
  const uint64_t rounds[2] = {0, staging.rounds - 1};
  for (size_t kind = 0; kind < 2; ++kind) {
    const uint64_t r = rounds[kind];
    p.copy_in[kind] = PlanCopyIn(shape, algo, node, l, staging, r);
    ShiftUserSide(&p.copy_in[kind], staging.offset(r), true);
    p.copy_out_on_node[kind] = PlanCopyOutOnNode(shape, algo, node, l, staging, r);
    ShiftUserSide(&p.copy_out_on_node[kind], staging.offset(r), false);
  }
  return p;
}

Result<const CallPlan*> CallPlans::For(uint64_t bytes_per_rank, uint64_t ssb_bytes) {
  ++uses_;
  Entry* victim = &entries_[0];
  for (Entry& e : entries_) {
    if (e.used && e.plan.bytes_per_rank == bytes_per_rank && e.ssb_bytes == ssb_bytes) {
      e.last_use = uses_;
      return &e.plan;
    }
    if (!e.used || e.last_use < victim->last_use) victim = &e;
  }
  auto planned = PlanStaging(*shape_, ssb_bytes, bytes_per_rank);
  if (!planned.ok()) return planned.status();
  victim->plan = MakeCallPlan(*shape_, algo_, node_, local_, planned.value());
  victim->used = true;
  victim->ssb_bytes = ssb_bytes;
  victim->last_use = uses_;
  return &victim->plan;
}

}  // namespace ohio
