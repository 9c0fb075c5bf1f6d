#include "daemon/engine/nonblocking_across_nodes_alltoall.h"

#include <cstring>
#include <string>

#include "shm/round_verdict.h"
#include "shm/segment_change.h"

namespace ohio {

NonblockingAcrossNodesAlltoall::NonblockingAcrossNodesAlltoall(const Segment* segment, const GroupShape* shape,
                                                               NodeLevelDesign algo, uint32_t node, NonblockingAlltoall* calls)
    : segment_(segment),
      header_(segment->header()),
      shape_(shape),
      algo_(algo),
      node_(node),
      ranks_(shape->ppn(node)),
      calls_(calls) {}

uint64_t NonblockingAcrossNodesAlltoall::SendAddress(uint32_t l) const {
  return segment_->slot(l)->nonblocking[call_ % kNonblockingDepth].send_address.load(std::memory_order_relaxed);
}

uint64_t NonblockingAcrossNodesAlltoall::RecvAddress(uint32_t l) const {
  return segment_->slot(l)->nonblocking[call_ % kNonblockingDepth].recv_address.load(std::memory_order_relaxed);
}

uint64_t NonblockingAcrossNodesAlltoall::BytesStarted(uint32_t l) const {
  return segment_->slot(l)->nonblocking[call_ % kNonblockingDepth].bytes_per_rank.load(std::memory_order_relaxed);
}

uint64_t NonblockingAcrossNodesAlltoall::ArrivalBytes(uint32_t l) const {
  const bool vector =
      segment_->slot(l)->nonblocking[call_ % kNonblockingDepth].tables_address.load(std::memory_order_relaxed) != 0;
  return vector ? kVectorBytes : BytesStarted(l);
}

Result<bool> NonblockingAcrossNodesAlltoall::StartCall() {
  // A call that ends before any round (nothing to exchange with the other nodes, the same
  // verdict on every node) lets the next nonblocking one start in the same pass.
  for (;;) {
    const uint32_t call = calls_->next_call();
    if (!calls_->AllStarted(call)) return false;
    call_ = call;
    round_in_call_ = 0;
    layout_ = PlanEagerLayout(*shape_, header_->plan_ssb_bytes, header_->plan_srb_bytes);
    vector_ = false;
    // Ranks that started different kinds disagree as blocking calls of different kinds would.
    agreed_ = NodeVerdict(ranks_, [this](uint32_t l) { return ArrivalBytes(l); },
                          [this](uint32_t l) { return shape_->rank_at(node_, l); })
                  .ok();
    if (!agreed_) {
      // Each rank arrives with its own M: the group's verdict fails the round on every node.
      staging_ = Staging{0, 0, 1};
      deliveries_.clear();
      return true;
    }
    if (ArrivalBytes(0) == kVectorBytes) {
      // The counts are checked by the round's digest, on every node alike.
      if (Status s = ReadVectorTables(); !s.ok()) return s;
      vector_ = true;
      eager_ = true;
      staging_ = Staging{kVectorBytes, 0, 1};  // the stream rounds are known after the first
      return true;
    }
    const uint64_t m = BytesStarted(0);
    eager_ = FitsEager(*shape_, layout_, m);
    if (eager_) {
      staging_ = Staging{m, m, 1};
      deliveries_ = PlanEagerDeliveries(*shape_, node_, layout_, m);
      return true;
    }
    // The same plan every node and every rank makes from the group's buffer sizes.
    auto staging = PlanGroupStaging(*shape_, algo_, header_->plan_ssb_bytes, header_->plan_srb_bytes, m,
                                    header_->plan_min_slice_bytes);
    if (!staging.ok()) {
      EndCall(staging.status());
      continue;
    }
    staging_ = staging.value();
    return true;
  }
}

Result<bool> NonblockingAcrossNodesAlltoall::Fill(uint32_t round) {
  if (call_ == 0) {
    Result<bool> started = StartCall();
    if (!started.ok() || !started.value()) return started;
  }
  if (round_ != 0) return false;  // arrived already: the round is under way
  // Like a rank, only once the node is through with the round before (its SSB, its SRB
  // halves); not earlier for an eager round: the daemon does not know how the last began.
  if (!RoundReached(header_->finished_round.load(std::memory_order_acquire), round - 1)) return false;
  for (uint32_t l = 0; l < ranks_; ++l) {
    const uint32_t arrived = segment_->slot(l)->arrived_round.load(std::memory_order_acquire);
    if (arrived != round - 1) {
      return Status(Code::kInvalidArgument,
                    "rank " + std::to_string(shape_->rank_at(node_, l)) + " entered a blocking alltoall (round " +
                        std::to_string(arrived) + ") while every rank of node " + std::to_string(node_) +
                        " had started nonblocking alltoall " + std::to_string(call_) +
                        ": the ranks called the group's collectives in different orders");
    }
  }
  if (vector_) {
    if (Status s = FillVector(round); !s.ok()) return s;
  } else if (agreed_) {
    if (Status s = CopyIn(round); !s.ok()) return s;
  }
  if (!eager_ && agreed_) {
    deliveries_ = PlanDeliveries(*shape_, algo_, node_, staging_.cover(round_in_call_), header_->plan_srb_bytes);
  }
  Arrive(round);
  return true;
}

uint8_t* NonblockingAcrossNodesAlltoall::SsbHalf(uint32_t round) const {
  // An eager round uses the half of its parity, an announced round the whole SSB.
  return segment_->ssb() + (eager_ ? (round & 1) * layout_.ssb_half : 0);
}

Status NonblockingAcrossNodesAlltoall::CopyIn(uint32_t round) {
  uint8_t* ssb = SsbHalf(round);
  for (uint32_t l = 0; l < ranks_; ++l) {
    const auto spans = PlanCopyIn(*shape_, algo_, node_, l, staging_, round_in_call_);
    if (Status s = Transfer(l, spans, ssb, SendAddress(l), false); !s.ok()) return s;
  }
  return Status::Ok();
}

void NonblockingAcrossNodesAlltoall::Arrive(uint32_t round) {
  for (uint32_t l = 0; l < ranks_; ++l) {
    RankSlot* slot = segment_->slot(l);
    slot->consumed.store(0, std::memory_order_relaxed);
    RoundEntry& e = EntryFor(slot, round);
    e.bytes_per_rank.store(agreed_ ? staging_.bytes_per_rank : ArrivalBytes(l), std::memory_order_relaxed);
    e.round_in_call.store(static_cast<uint32_t>(round_in_call_), std::memory_order_relaxed);
    e.rounds_in_call.store(static_cast<uint32_t>(staging_.rounds), std::memory_order_relaxed);
    e.send_address.store(0, std::memory_order_relaxed);
    slot->arrived_round.store(round, std::memory_order_seq_cst);
  }
  round_ = round;
  local_copied_ = false;
  internode_read_ = false;
  copied_ = 0;
}

Result<bool> NonblockingAcrossNodesAlltoall::Drain() {
  if (round_ == 0) return false;
  if (vector_) return DrainVector();
  const bool failed = header_->failed_round.load(std::memory_order_acquire) == round_;
  bool changed = false;
  if (!failed && agreed_) {
    // An eager round's blocks are published as they land; an announced round's once released.
    const bool eager_open = eager_;
    const bool released = !eager_ && header_->released_round.load(std::memory_order_acquire) == round_;
    if ((eager_open || released) && !local_copied_) {
      if (Status s = CopyOutOnNode(); !s.ok()) return s;
      local_copied_ = true;
      changed = true;
    }
    uint32_t landed = 0;
    if (eager_) {
      const uint64_t word = header_->eager_landed[round_ & 1].load(std::memory_order_acquire);
      if ((word >> 32) == round_) landed = static_cast<uint32_t>(word);
      if (landed != 0 && !internode_read_) {
        // Where the blocks landed depends on the inter-node algorithm the daemons chose for the round.
        internode_read_ = true;
        const InterNodeAlgorithm internode = EagerInterNodeOf(header_->eager_internode[round_ & 1].load(std::memory_order_relaxed), round_);
        if (internode != InterNodeAlgorithm::kPairwise) {
          deliveries_ = PlanEagerRoundDeliveries(*shape_, node_, layout_, staging_.bytes_per_rank, internode);
        }
      }
    } else if (released) {
      landed = header_->delivered.load(std::memory_order_acquire);
    }
    while (copied_ < landed && copied_ < deliveries_.size()) {
      if (Status s = CopyOutDelivery(deliveries_[copied_]); !s.ok()) return s;
      ++copied_;
      changed = true;
      // Announced (v3): what every rank consumed is what the daemon grants its senders.
      if (!eager_) {
        for (uint32_t l = 0; l < ranks_; ++l) segment_->slot(l)->consumed.store(copied_, std::memory_order_release);
      }
    }
  }
  const bool complete = agreed_ && local_copied_ && copied_ == deliveries_.size();
  if (!failed && !complete) return changed;
  EndRound(failed);
  return true;
}

void NonblockingAcrossNodesAlltoall::EndRound(bool failed) {
  MarkDone();
  if (failed) {
    EndCall(Status(static_cast<Code>(header_->round_error_code.load(std::memory_order_relaxed)),
                   std::string(header_->round_error, strnlen(header_->round_error, kErrorMessageBytes))));
  } else if (round_in_call_ + 1 == staging_.rounds) {
    EndCall(Status::Ok());
  } else {
    ++round_in_call_;
    round_ = 0;
  }
}

Status NonblockingAcrossNodesAlltoall::CopyOutOnNode() {
  uint8_t* ssb = SsbHalf(round_);
  for (uint32_t l = 0; l < ranks_; ++l) {
    const auto spans = PlanCopyOutOnNode(*shape_, algo_, node_, l, staging_, round_in_call_);
    if (Status s = Transfer(l, spans, ssb, RecvAddress(l), true); !s.ok()) return s;
  }
  return Status::Ok();
}

Status NonblockingAcrossNodesAlltoall::CopyOutDelivery(const Delivery& d) {
  uint8_t* srb = segment_->srb() + (eager_ ? (round_ & 1) * layout_.srb_half : 0);
  for (uint32_t l = 0; l < ranks_; ++l) {
    const auto spans = PlanCopyOutDelivery(*shape_, node_, l, staging_, round_in_call_, d);
    if (Status s = Transfer(l, spans, srb, RecvAddress(l), true); !s.ok()) return s;
  }
  return Status::Ok();
}

Status NonblockingAcrossNodesAlltoall::Transfer(uint32_t l, const std::vector<CopySpan>& spans, uint8_t* shared,
                                         uint64_t base, bool writing) {
  local_.clear();
  remote_.clear();
  uint64_t bytes = 0;
  for (const CopySpan& s : spans) {
    if (s.len == 0) continue;
    // Reading: src is in the rank's send buffer, dst in the segment; writing the other way.
    local_.push_back({shared + (writing ? s.src : s.dst), s.len});
    remote_.push_back({reinterpret_cast<void*>(base + (writing ? s.dst : s.src)), s.len});
    bytes += s.len;
  }
  if (local_.empty()) return Status::Ok();
  auto memory = calls_->Memory(l);
  if (!memory.ok()) {
    culprit_ = shape_->rank_at(node_, l);
    return memory.status();
  }
  const ssize_t n = memory.value()->Transfer(local_, remote_, writing);
  if (n == static_cast<ssize_t>(bytes)) return Status::Ok();
  culprit_ = shape_->rank_at(node_, l);
  return calls_->Refused(l, *memory.value(), writing, writing ? "receive buffer" : "send buffer", bytes,
                          base + (writing ? spans.front().dst : spans.front().src));
}

void NonblockingAcrossNodesAlltoall::MarkDone() {
  for (uint32_t l = 0; l < ranks_; ++l) segment_->slot(l)->done_round.store(round_, std::memory_order_seq_cst);
}

void NonblockingAcrossNodesAlltoall::EndCall(const Status& outcome) {
  calls_->Publish(call_, outcome);
  call_ = 0;
  round_ = 0;
  round_in_call_ = 0;
}

}  // namespace ohio
