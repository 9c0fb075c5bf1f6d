#include "sim/round_schedule.h"

#include "shm/plan/bruck_plan.h"
#include "shm/plan/copy_plan.h"
#include "shm/plan/exchange_plan.h"
#include "shm/segment_layout.h"
#include "sim/vector_schedule.h"

namespace ohio::sim {

uint64_t SpanBytes(const std::vector<CopySpan>& spans) {
  uint64_t sum = 0;
  for (const CopySpan& s : spans) sum += s.len;
  return sum;
}

const char* RoundKindName(RoundKind k) {
  switch (k) {
    case RoundKind::kEager: return "eager";
    case RoundKind::kAnnounced: return "announced";
    case RoundKind::kHypercube: return "hypercube";
  }
  return "?";
}

Result<std::shared_ptr<CallSchedule>> CallSchedule::Make(const GroupShape& shape, const GroupSettings& settings,
                                                         uint64_t m) {
  if (shape.nodes() < 2) {
    return Status(Code::kInvalidArgument,
                  "a group on one node runs without its daemon; ohio-sim models groups spanning at least 2 nodes");
  }
  std::shared_ptr<CallSchedule> c(new CallSchedule(shape, settings, m));
  c->plan_srb_ = settings.srb_bytes;
  c->layout_ = PlanEagerLayout(shape, settings.ssb_bytes, settings.srb_bytes);
  c->eager_ = FitsEager(shape, c->layout_, m);
  c->internode_ = RoundInterNodeAlgorithm(shape, settings.algo, c->layout_, settings.table, m, c->eager_);
  if (c->eager_) {
    // One round carrying every message whole (the ranks stage it in an SSB half).
    c->staging_.bytes_per_rank = m;
    c->staging_.slice = m;
    c->staging_.rounds = 1;
  } else {
    Result<Staging> staging =
        PlanGroupStaging(shape, settings.algo, settings.ssb_bytes, settings.srb_bytes, m, settings.min_slice_bytes);
    if (!staging.ok()) return staging.status();
    c->staging_ = staging.value();
  }
  return c;
}

std::shared_ptr<CallSchedule> CallSchedule::Vector(std::shared_ptr<const VectorCallSchedule> vector) {
  std::shared_ptr<CallSchedule> c(new CallSchedule(GroupShape(), GroupSettings(), kVectorBytes));
  c->eager_ = true;  // every alltoallv round is an eager one (a part too large is refused)
  c->vector_ = std::move(vector);
  return c;
}

InterNodeAlgorithm CallSchedule::internode() const { return vector_ ? vector_->internode() : internode_; }

uint64_t CallSchedule::rounds() const { return vector_ ? vector_->rounds() : staging_.rounds; }

NodeRound CallSchedule::Plan(uint32_t node, uint64_t round) const {
  if (vector_) return vector_->Plan(node, round);
  NodeRound r;
  const NodeLevelDesign algo = settings_.algo;
  r.internode = internode_;
  r.kind = !eager_ ? RoundKind::kAnnounced
           : internode_ == InterNodeAlgorithm::kHypercube ? RoundKind::kHypercube
                                                          : RoundKind::kEager;
  r.window = internode_ == InterNodeAlgorithm::kDirect ? std::max<uint32_t>(settings_.table.direct_window, 1) : 0;
  const RoundCover cover = staging_.cover(round);
  std::vector<Delivery> deliveries;
  switch (r.kind) {
    case RoundKind::kAnnounced: {
      for (const Put& p : PlanPuts(shape_, algo, node, cover, plan_srb_)) {
        r.puts.push_back({p.dest, p.delivery, p.delivery, 0, p.bytes, p.bytes});
      }
      deliveries = PlanDeliveries(shape_, algo, node, cover, plan_srb_);
      for (uint32_t d = 0; d < deliveries.size(); ++d) r.deliveries.push_back({deliveries[d].source, d, deliveries[d].bytes});
      r.granted = algo == NodeLevelDesign::kV3 ? std::min<uint32_t>(2, deliveries.size()) : deliveries.size();
      break;
    }
    case RoundKind::kEager: {
      for (const Put& p : PlanEagerPuts(shape_, algo, node, layout_, m_)) {
        r.puts.push_back({p.dest, node, 0, 0, p.bytes, p.bytes + kEagerHeaderBytes});
      }
      deliveries = PlanEagerDeliveries(shape_, node, layout_, m_);
      for (const Delivery& d : deliveries) r.deliveries.push_back({d.source, d.source, d.bytes});
      break;
    }
    case RoundKind::kHypercube: {
      for (uint32_t k = 0; k < BruckRounds(shape_.nodes()); ++k) {
        const BruckMessage msg = PlanBruckMessage(shape_, m_, node, k);
        r.puts.push_back({msg.to, k, 0, k, msg.bytes, msg.bytes + kBruckHeaderBytes});
      }
      deliveries = PlanBruckDeliveries(shape_, m_, node, layout_.srb_half);
      for (const Delivery& d : deliveries) r.deliveries.push_back({d.source, d.step, d.bytes});
      break;
    }
  }

  const uint32_t ppn = shape_.ppn(node);
  r.copy_in.resize(ppn);
  r.copy_on_node.resize(ppn);
  r.copy_out.assign(deliveries.size(), std::vector<uint64_t>(ppn, 0));
  for (uint32_t l = 0; l < ppn; ++l) {
    r.copy_in[l] = SpanBytes(PlanCopyIn(shape_, algo, node, l, staging_, round));
    r.copy_on_node[l] = SpanBytes(PlanCopyOutOnNode(shape_, algo, node, l, staging_, round));
    for (size_t d = 0; d < deliveries.size(); ++d) {
      r.copy_out[d][l] = SpanBytes(PlanCopyOutDelivery(shape_, node, l, staging_, round, deliveries[d]));
    }
  }
  return r;
}

}  // namespace ohio::sim
