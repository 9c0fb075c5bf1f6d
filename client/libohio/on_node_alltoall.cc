#include "client/libohio/on_node_alltoall.h"

#include <unistd.h>

#include <cstring>

#include "client/libohio/single_copy.h"
#include "shm/latency_buckets.h"
#include "shm/plan/local_vector_plan.h"
#include "shm/plan/staging.h"
#include "shm/plan/vector_plan.h"
#include "shm/round_verdict.h"
#include "shm/segment_change.h"

namespace ohio {
namespace {

void Bump(std::atomic<uint64_t>& counter, uint64_t by) {
  // Only local rank 0 writes these: no read-modify-write needed.
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

}  // namespace

OnNodeAlltoall::OnNodeAlltoall(const Segment* segment, const GroupShape* shape, NodeLevelDesign algo, uint32_t local,
                             const RoundWaiter* waiter, StageReport* report)
    : segment_(segment),
      header_(segment->header()),
      shape_(shape),
      local_(local),
      ranks_(shape->ppn(0)),
      waiter_(waiter),
      report_(report),
      half_bytes_(LocalSsbHalfBytes(segment->header()->plan_ssb_bytes)),
      plans_(shape, algo, 0, local),
      vector_region_(VectorRegionBytes(*shape, EagerLayout{half_bytes_, 0, 0}, 0)),
      vector_piece_slot_(VectorPieceSlotBytes(*shape, vector_region_)),
      vector_keys_(VectorPairKeysOf(*shape, shape->rank_at(0, local))) {
  segment->slot(local)->pid.store(static_cast<uint32_t>(getpid()), std::memory_order_relaxed);
  segment->slot(local)->pid_namespace.store(PidNamespaceId(), std::memory_order_relaxed);
}

Status OnNodeAlltoall::Alltoall(const uint8_t* send, uint8_t* recv, uint64_t m, uint32_t* next_round) {
  rounds_this_call_ = 0;
  report_->Start(m);
  Status s = Run(send, recv, m, next_round);
  report_->Stop();
  return s;
}

Status OnNodeAlltoall::Run(const uint8_t* send, uint8_t* recv, uint64_t m, uint32_t* next_round) {
  if (m >= SingleCopyThreshold(waiter_->oversubscribed()) && send != recv && header_->single_copy_refused.load(std::memory_order_relaxed) == 0) {
    bool fall_back = false;
    Status s = SingleCopyRound(send, recv, m, (*next_round)++, &fall_back);
    if (!fall_back) return s;
  }
  auto plan = plans_.For(m, half_bytes_);  // PlanGroupStaging's for one node
  if (!plan.ok()) return plan.status();
  const CallPlan& p = *plan.value();
  for (uint64_t r = 0; r < p.staging.rounds; ++r) {
    Status s = StagedRound(p, r, send, recv, (*next_round)++);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status OnNodeAlltoall::OptOut(uint32_t* next_round) {
  const uint32_t k = (*next_round)++;
  Arrive(k, kOptOutBytes, 0, 1, nullptr);
  if (Status s = MeetEveryone(k); !s.ok()) return s;
  Status v = Verdict(k);
  Done(k, false);
  if (v.ok()) return Status(Code::kProtocol, "a round a rank had opted out of went ahead");
  return v;
}

void OnNodeAlltoall::Arrive(uint32_t k, uint64_t m, uint64_t round_in_call, uint64_t rounds,
                           const void* send_address) {
  RankSlot* me = segment_->slot(local_);
  RoundEntry& e = EntryFor(me, k);
  e.bytes_per_rank.store(m, std::memory_order_relaxed);
  e.round_in_call.store(static_cast<uint32_t>(round_in_call), std::memory_order_relaxed);
  e.rounds_in_call.store(static_cast<uint32_t>(rounds), std::memory_order_relaxed);
  e.send_address.store(reinterpret_cast<uint64_t>(send_address), std::memory_order_relaxed);
  me->arrived_round.store(k, std::memory_order_seq_cst);
  SignalChange(header_);
  report_->Arrived();
  ++rounds_this_call_;
}

Status OnNodeAlltoall::MeetEveryone(uint32_t k) {
  Status s = waiter_->WaitForRanks([this, k] { return segment_->AllArrived(k); }, "the other ranks", "enter the alltoall");
  report_->Lap(Stage::kMeet);
  return s;
}

Status OnNodeAlltoall::Verdict(uint32_t k) const {
  return NodeVerdict(
      ranks_, [this, k](uint32_t l) { return EntryFor(segment_->slot(l), k).bytes_per_rank.load(std::memory_order_relaxed); },
      [this](uint32_t l) { return shape_->rank_at(0, l); });
}

bool OnNodeAlltoall::OnePidNamespace() const {
  const uint64_t mine = segment_->slot(local_)->pid_namespace.load(std::memory_order_relaxed);
  if (mine == 0) return false;
  for (uint32_t l = 0; l < ranks_; ++l) {
    if (segment_->slot(l)->pid_namespace.load(std::memory_order_relaxed) != mine) return false;
  }
  return true;
}

void OnNodeAlltoall::NeverReadInPlace(uint32_t k) {
  SaySeparatePidNamespacesOnce();
  // Every rank stores it before its done of round k, so before the call's next meeting: no
  // rank decides a later call before every rank has stopped offering its buffer.
  header_->single_copy_refused.store(k, std::memory_order_seq_cst);
}

uint32_t OnNodeAlltoall::FirstWithoutOffer(uint32_t k) const {
  for (uint32_t l = 0; l < ranks_; ++l) {
    if (EntryFor(segment_->slot(l), k).send_address.load(std::memory_order_relaxed) == 0) return l;
  }
  return ranks_;
}

void OnNodeAlltoall::Done(uint32_t k, bool someone_waits) {
  segment_->slot(local_)->done_round.store(k, std::memory_order_seq_cst);
  if (someone_waits) SignalChange(header_);
}

Status OnNodeAlltoall::StagedRound(const CallPlan& plan, uint64_t round, const uint8_t* send, uint8_t* recv,
                                  uint32_t k) {
  uint8_t* half = segment_->ssb() + (k & 1) * half_bytes_;
  CopyIn(plan, round, send, half);
  report_->Lap(Stage::kCopyIn);
  Arrive(k, plan.staging.bytes_per_rank, round, plan.staging.rounds, nullptr);
  if (Status s = MeetEveryone(k); !s.ok()) return s;
  Status v = Verdict(k);
  if (v.ok()) CopyOutOnNode(plan, round, half, recv);
  report_->Lap(Stage::kCopyOutOnNode);
  Done(k, false);
  return v;
}

Status OnNodeAlltoall::SingleCopyRound(const uint8_t* send, uint8_t* recv, uint64_t m, uint32_t k, bool* fall_back) {
  Arrive(k, m, 0, 1, SingleCopyPossible() ? send : nullptr);
  if (Status s = MeetEveryone(k); !s.ok()) return s;
  if (Status v = Verdict(k); !v.ok()) {
    Done(k, false);
    return v;
  }
  if (FirstWithoutOffer(k) < ranks_) {
    // Someone could not offer its buffer (in place, or its process may not be read): every
    // rank sees the same slots and goes through the SSB together.
    Done(k, false);
    *fall_back = true;
    return Status::Ok();
  }
  if (!OnePidNamespace()) {
    // Each rank's pid is a number in its own namespace, meaningless (or another process's) in
    // the others'. Every rank sees the same slots, falls back and never offers again.
    NeverReadInPlace(k);
    Done(k, false);
    *fall_back = true;
    return Status::Ok();
  }
  const uint32_t me = shape_->rank_at(0, local_);
  bool refused = false;
  // Each rank starts with the next one, so that no send buffer has every reader at once.
  for (uint32_t i = 0; i < ranks_ && !refused; ++i) {
    const uint32_t l = (local_ + i) % ranks_;
    const uint32_t src = shape_->rank_at(0, l);
    if (l == local_) {
      std::memcpy(recv + src * m, send + me * m, m);
      continue;
    }
    const RankSlot* slot = segment_->slot(l);
    const pid_t pid = static_cast<pid_t>(slot->pid.load(std::memory_order_relaxed));
    const uint64_t address = EntryFor(slot, k).send_address.load(std::memory_order_relaxed);
    std::string why;
    switch (ReadFromRank(pid, address + me * m, recv + src * m, m, &why)) {
      case ReadOutcome::kDone:
        break;
      case ReadOutcome::kGone:
        // It died after arriving: its daemon is closing the group; take that error.
        return waiter_->Wait([] { return false; }, "ohiod", "close the group of a rank that died");
      case ReadOutcome::kBadAddress:  // this call's own buffers are all mapped: treat as refused
      case ReadOutcome::kRefused:
        SayRefusedOnce(pid, why);
        // Published before this rank's done, so every rank sees it once all are done.
        header_->single_copy_refused.store(k, std::memory_order_seq_cst);
        refused = true;
        break;
    }
  }
  report_->Lap(Stage::kReadPeers);
  Done(k, true);
  // The others read this rank's send buffer until they are done: it must not change before.
  Status s = waiter_->WaitForRanks([this, k] { return segment_->AllDone(k); }, "the other ranks",
                           "finish reading this rank's send buffer");
  report_->Lap(Stage::kAwaitReaders);
  if (!s.ok()) return s;
  *fall_back = header_->single_copy_refused.load(std::memory_order_seq_cst) == k;
  return Status::Ok();
}

void OnNodeAlltoall::Count(uint64_t m, const Status& result, std::chrono::nanoseconds took) {
  Record(m, uint64_t{ranks_} * ranks_ * m, result, took);
}

void OnNodeAlltoall::Record(uint64_t class_bytes, uint64_t bytes_local, const Status& result,
                           std::chrono::nanoseconds took) {
  if (local_ != 0) return;
  CallStats& st = header_->stats;
  // An opt-out is no failure; a group closed under the call (a rank gone, a timeout, the
  // daemon lost) is counted by the daemon that closed it.
  const Code code = result.code();
  if (code == Code::kOptedOut || code == Code::kGroupFailed || code == Code::kTimeout || code == Code::kDaemonLost) return;
  if (!result.ok()) {
    Bump(st.failed, 1);
    Bump(st.failed_by_code[static_cast<size_t>(result.code()) % 16], 1);
    return;
  }
  Bump(st.rounds, rounds_this_call_);
  Bump(st.calls, 1);
  Bump(st.bytes_local, bytes_local);
  const uint64_t ns = took.count() < 0 ? 0 : static_cast<uint64_t>(took.count());
  const size_t c = LatencySizeClass(class_bytes);
  Bump(st.latency_count[c][LatencyBucket(ns)], 1);
  Bump(st.latency_sum_ns[c], ns);
}

}  // namespace ohio
