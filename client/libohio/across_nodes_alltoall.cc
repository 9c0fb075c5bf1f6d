#include "client/libohio/across_nodes_alltoall.h"

#include <unistd.h>

#include <cstring>

#include "shm/plan/exchange_plan.h"
#include "shm/round_verdict.h"
#include "shm/plan/staging.h"

namespace ohio {
namespace {

void RunCopies(const std::vector<CopySpan>& spans, const uint8_t* src, uint8_t* dst) {
  for (const CopySpan& s : spans) std::memcpy(dst + s.dst, src + s.src, s.len);
}

// An eager call is one round carrying all of M.
Staging OneRound(uint64_t m) {
  Staging one;
  one.bytes_per_rank = m;
  one.slice = m;
  one.rounds = 1;
  return one;
}

}  // namespace

AcrossNodesAlltoall::AcrossNodesAlltoall(const Segment* segment, const GroupShape* shape, NodeLevelDesign algo, uint32_t node,
                               uint32_t local, const RoundWaiter* waiter, int doorbell_fd, StageReport* report)
    : segment_(segment),
      header_(segment->header()),
      shape_(shape),
      algo_(algo),
      node_(node),
      local_(local),
      waiter_(waiter),
      report_(report),
      doorbell_fd_(doorbell_fd),
      layout_(PlanEagerLayout(*shape, segment->header()->plan_ssb_bytes, segment->header()->plan_srb_bytes)) {}

void AcrossNodesAlltoall::RingIfSleeping() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (header_->daemon_sleeping.load(std::memory_order_relaxed) != 0) {
    uint64_t one = 1;
    (void)!write(doorbell_fd_, &one, sizeof(one));
  }
}

Status AcrossNodesAlltoall::AwaitFinished(uint32_t through) {
  auto finished = [this, through] { return RoundReached(header_->finished_round.load(std::memory_order_acquire), through); };
  if (finished()) return Status::Ok();
  RingIfSleeping();
  RankSlot* me = segment_->slot(local_);
  me->awaiting_finished.store(through, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // paired with Group::PublishFinished's
  Status s = waiter_->Wait(finished, "ohiod", "free the shared send buffer");
  me->awaiting_finished.store(0, std::memory_order_relaxed);
  report_->Lap(Stage::kAwaitSsb);
  return s;
}

void AcrossNodesAlltoall::Arrive(uint32_t k, uint64_t m, uint64_t round_in_call, uint64_t rounds) {
  RankSlot* me = segment_->slot(local_);
  me->consumed.store(0, std::memory_order_relaxed);
  RoundEntry& e = EntryFor(me, k);
  e.bytes_per_rank.store(m, std::memory_order_relaxed);
  e.round_in_call.store(static_cast<uint32_t>(round_in_call), std::memory_order_relaxed);
  e.rounds_in_call.store(static_cast<uint32_t>(rounds), std::memory_order_relaxed);
  me->arrived_round.store(k, std::memory_order_seq_cst);
  report_->Arrived();
  // The node's other ranks may sleep waiting for this arrival; the daemon may sleep too.
  SignalChange(header_);
  RingIfSleeping();
}

Status AcrossNodesAlltoall::AwaitBlocksLanded(uint32_t k, uint32_t blocks) {
  const uint32_t parity = k & 1;
  const uint64_t want = uint64_t{k} << 32 | blocks;
  Status s = waiter_->Wait(
      [this, parity, want, k] {
        const uint64_t landed = header_->eager_landed[parity].load(std::memory_order_acquire);
        return ((landed >> 32) == (want >> 32) && landed >= want) || RoundFailed(k);
      },
      "ohiod", "receive the other nodes' blocks");
  report_->Lap(Stage::kAwaitBlocks);
  return s;
}

Status AcrossNodesAlltoall::MeetNodeRanks(uint32_t k) {
  Status s = waiter_->Wait([this, k] { return segment_->AllArrived(k); }, "this node's other ranks",
                           "enter the alltoall");
  report_->Lap(Stage::kMeet);
  return s;
}

Status AcrossNodesAlltoall::Verdict(uint32_t k) const {
  return NodeVerdict(
      shape_->ppn(node_),
      [this, k](uint32_t l) { return EntryFor(segment_->slot(l), k).bytes_per_rank.load(std::memory_order_relaxed); },
      [this](uint32_t l) { return shape_->rank_at(node_, l); });
}

bool AcrossNodesAlltoall::RoundFailed(uint32_t k) const {
  return header_->failed_round.load(std::memory_order_acquire) == k;
}

Status AcrossNodesAlltoall::RoundError() const {
  return Status(static_cast<Code>(header_->round_error_code.load(std::memory_order_relaxed)),
                std::string(header_->round_error, strnlen(header_->round_error, kErrorMessageBytes)));
}

void AcrossNodesAlltoall::Done(uint32_t k) {
  segment_->slot(local_)->done_round.store(k, std::memory_order_seq_cst);
}

AcrossNodesAlltoall::EagerPlan& AcrossNodesAlltoall::EagerPlanFor(uint64_t m) {
  ++uses_;
  EagerPlan* victim = &eager_plans_[0];
  for (EagerPlan& p : eager_plans_) {
    if (p.used && p.call.bytes_per_rank == m) {
      p.last_use = uses_;
      return p;
    }
    if (!p.used || p.last_use < victim->last_use) victim = &p;
  }
  victim->call = MakeCallPlan(*shape_, algo_, node_, local_, OneRound(m));
  for (EagerPlan::Arrivals& a : victim->by_internode) a = EagerPlan::Arrivals{};
  victim->used = true;
  victim->last_use = uses_;
  return *victim;
}

const AcrossNodesAlltoall::EagerPlan::Arrivals& AcrossNodesAlltoall::ArrivalsFor(EagerPlan& plan, InterNodeAlgorithm internode) {
  EagerPlan::Arrivals& a = plan.by_internode[static_cast<size_t>(internode)];
  if (a.planned) return a;
  const uint64_t m = plan.call.bytes_per_rank;
  a.copy_out.clear();
  for (const Delivery& d : PlanEagerRoundDeliveries(*shape_, node_, layout_, m, internode)) {
    a.copy_out.push_back(PlanCopyOutDelivery(*shape_, node_, local_, OneRound(m), 0, d));
  }
  a.planned = true;
  return a;
}

Status AcrossNodesAlltoall::Alltoall(const uint8_t* send, uint8_t* recv, uint64_t m, uint32_t* next_round) {
  report_->Start(m);
  Status s = Rounds(send, recv, m, next_round);
  report_->Stop();
  return s;
}

Status AcrossNodesAlltoall::Rounds(const uint8_t* send, uint8_t* recv, uint64_t m, uint32_t* next_round) {
  if (FitsEager(*shape_, layout_, m)) return EagerRound(EagerPlanFor(m), send, recv, (*next_round)++);
  auto staging = PlanGroupStaging(*shape_, algo_, header_->plan_ssb_bytes, header_->plan_srb_bytes, m,
                                  header_->plan_min_slice_bytes);
  if (!staging.ok()) return staging.status();
  for (uint64_t round = 0; round < staging->rounds; ++round) {
    Status s = AnnouncedRound(staging.value(), round, send, recv, (*next_round)++);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status AcrossNodesAlltoall::OptOut(uint32_t* next_round) {
  const uint32_t k = (*next_round)++;
  if (Status s = AwaitFinished(k - 1); !s.ok()) return s;
  last_round_eager_ = false;
  Arrive(k, kOptOutBytes, 0, 1);
  if (Status s = MeetNodeRanks(k); !s.ok()) return s;
  Status v = Verdict(k);
  Done(k);
  if (v.ok()) return Status(Code::kProtocol, "a round a rank had opted out of went ahead");
  return v;
}

Status AcrossNodesAlltoall::EagerRound(EagerPlan& plan, const uint8_t* send, uint8_t* recv, uint32_t k) {
  // Half k mod 2 last carried round k-2 (or, after a round that used the whole SSB, k-1).
  if (Status s = AwaitFinished(last_round_eager_ ? k - 2 : k - 1); !s.ok()) return s;
  last_round_eager_ = true;
  const uint32_t parity = k & 1;
  uint8_t* ssb_half = segment_->ssb() + parity * layout_.ssb_half;
  CopyIn(plan.call, 0, send, ssb_half);
  report_->Lap(Stage::kCopyIn);
  Arrive(k, plan.call.bytes_per_rank, 0, 1);
  if (Status s = MeetNodeRanks(k); !s.ok()) return s;
  if (Status v = Verdict(k); !v.ok()) {
    Done(k);
    return v;
  }
  CopyOutOnNode(plan.call, 0, ssb_half, recv);
  report_->Lap(Stage::kCopyOutOnNode);
  const uint8_t* srb_half = segment_->srb() + parity * layout_.srb_half;
  const EagerPlan::Arrivals* arrivals = nullptr;  // known once the first block landed
  for (uint32_t d = 0; d < shape_->nodes() - 1; ++d) {
    Status s = AwaitBlocksLanded(k, d + 1);
    if (!s.ok()) return s;
    if (RoundFailed(k)) break;
    if (arrivals == nullptr) {
      arrivals = &ArrivalsFor(plan, EagerInterNodeOf(header_->eager_internode[parity].load(std::memory_order_relaxed), k));
    }
    RunCopies(arrivals->copy_out[d], srb_half, recv);
    report_->Lap(Stage::kCopyOutAcrossNodes);
  }
  report_->DaemonSteps(header_->stamps[parity], k);
  Done(k);
  if (RoundFailed(k)) return RoundError();
  return Status::Ok();
}

Status AcrossNodesAlltoall::AnnouncedRound(const Staging& staging, uint64_t round, const uint8_t* send, uint8_t* recv,
                                      uint32_t k) {
  // The whole SSB: the node must be through with the round before.
  if (Status s = AwaitFinished(k - 1); !s.ok()) return s;
  last_round_eager_ = false;
  RunCopies(PlanCopyIn(*shape_, algo_, node_, local_, staging, round), send, segment_->ssb());
  report_->Lap(Stage::kCopyIn);
  Arrive(k, staging.bytes_per_rank, round, staging.rounds);
  Status s = waiter_->Wait([this, k] { return header_->released_round.load(std::memory_order_acquire) == k; },
                           "ohiod", "complete the alltoall");
  // An announced round meets every node: its ranks wait until the daemon releases it.
  report_->Lap(Stage::kMeet);
  if (!s.ok()) return s;
  if (!RoundFailed(k)) {
    RunCopies(PlanCopyOutOnNode(*shape_, algo_, node_, local_, staging, round), segment_->ssb(), recv);
    report_->Lap(Stage::kCopyOutOnNode);
    s = CopyOutAnnounced(staging, round, k, recv);
    if (!s.ok()) return s;
    report_->DaemonSteps(header_->stamps[k & 1], k);
  }
  Status round_error = RoundFailed(k) ? RoundError() : Status::Ok();
  Done(k);
  RingIfSleeping();
  return round_error;
}

Status AcrossNodesAlltoall::CopyOutAnnounced(const Staging& staging, uint64_t round, uint32_t k, uint8_t* recv) {
  RankSlot* slot = segment_->slot(local_);
  const auto deliveries = PlanDeliveries(*shape_, algo_, node_, staging.cover(round), header_->plan_srb_bytes);
  for (uint32_t d = 0; d < deliveries.size(); ++d) {
    Status s = waiter_->Wait(
        [this, d, k] { return header_->delivered.load(std::memory_order_acquire) > d || RoundFailed(k); }, "ohiod",
        "receive the other nodes' blocks");
    report_->Lap(Stage::kAwaitBlocks);
    if (!s.ok()) return s;
    if (RoundFailed(k)) return Status::Ok();
    RunCopies(PlanCopyOutDelivery(*shape_, node_, local_, staging, round, deliveries[d]), segment_->srb(), recv);
    report_->Lap(Stage::kCopyOutAcrossNodes);
    slot->consumed.store(d + 1, std::memory_order_release);
    RingIfSleeping();
  }
  return Status::Ok();
}

}  // namespace ohio
