// Alltoallv of a group spanning nodes, as one rank does it: one eager round whose blocks the
// daemon plans from the node's count tables (shm/vector_plan.h).
//   1. wait until this node is through with round k-2 (its ranks read each other's tables of
//      that parity until then), write the count table of k's parity, stage the row in this
//      rank's region of SSB half k mod 2, arrive;
//   2. meet the node's other ranks;
//   3. wait until the daemon publishes every other node's block (it does so only once every
//      node's count digest is in and the counts agree) or the round's error, the same on every
//      rank of every node: a pair that disagrees, or a node whose part does not fit one round
//      (kNotSupported, nothing staged for it: a caller can do the call another way);
//   4. copy out what the node's own ranks send this rank from their regions, and each block's
//      pieces for this rank, where its node's own tables put them.
#include <cstring>

#include "client/remote_alltoall.h"
#include "shm/vector_plan.h"

namespace ohio {

Status RemoteAlltoall::Alltoallv(const VectorCall& call, uint32_t* next_round) {
  const uint32_t k = (*next_round)++;
  // Half k mod 2 and the tables of k's parity last served round k-2 (or, after a round that
  // used the whole SSB, k-1).
  if (Status s = AwaitFinished(last_round_eager_ ? k - 2 : k - 1); !s.ok()) return s;
  last_round_eager_ = true;
  const uint32_t size = shape_->size();
  CountEntry* table = segment_->count_table(local_, k);
  for (uint32_t j = 0; j < size; ++j) {
    table[j] = CountEntry{call.send_counts[j], call.send_displs[j], call.recv_counts[j]};
  }
  const uint32_t parity = k & 1;
  uint8_t* ssb_half = segment_->ssb() + parity * layout_.ssb_half;
  const uint64_t region = VectorRegionBytes(*shape_, layout_, node_);
  // A row that does not fit is not staged: the daemon sees that from the same table, and the
  // call fails on every node.
  if (VectorRowFits(*shape_, table, region)) {
    PlanVectorCopyIn(*shape_, call.send_counts, call.send_displs, &vector_spans_);
    for (const CopySpan& s : vector_spans_) {
      std::memcpy(ssb_half + local_ * region + s.dst, call.send + s.src, s.len);
    }
  }
  report_->Lap(Stage::kCopyIn);
  Arrive(k, kVectorBytes, 0, 1);
  if (Status s = MeetNodeRanks(k); !s.ok()) return s;
  if (Status v = Verdict(k); !v.ok()) {
    Done(k);
    return v;
  }
  const uint64_t all_landed = uint64_t{k} << 32 | (shape_->nodes() - 1);
  Status s = waiter_->Wait(
      [this, parity, all_landed, k] {
        const uint64_t landed = header_->eager_landed[parity].load(std::memory_order_acquire);
        return ((landed >> 32) == (all_landed >> 32) && landed >= all_landed) || RoundFailed(k);
      },
      "ohiod", "receive the other nodes' blocks");
  report_->Lap(Stage::kAwaitBlocks);
  if (!s.ok()) return s;
  // Nothing is copied out before the verdict: a call that fails moved nothing.
  if (!RoundFailed(k)) {
    const NodeCounts counts{segment_->count_table(0, k), size};
    PlanVectorCopyOutLocal(*shape_, node_, local_, layout_, counts, call.recv_displs, &vector_spans_);
    for (const CopySpan& c : vector_spans_) {
      std::memcpy(call.recv + c.dst, ssb_half + c.src, c.len);
    }
    report_->Lap(Stage::kCopyOutLocal);
    const uint8_t* srb_half = segment_->srb() + parity * layout_.srb_half;
    for (uint32_t source = 0; source < shape_->nodes(); ++source) {
      if (source == node_) continue;
      const uint8_t* block = srb_half + EagerSlotOffset(layout_, node_, source, 0) + kEagerHeaderBytes;
      PlanVectorCopyOutBlock(*shape_, node_, local_, counts, source, call.recv_displs, &vector_spans_);
      for (const CopySpan& c : vector_spans_) {
        std::memcpy(call.recv + c.dst, block + c.src, c.len);
      }
    }
    report_->Lap(Stage::kCopyOutRemote);
  }
  report_->DaemonSteps(header_->stamps[parity], k);
  Done(k);
  if (RoundFailed(k)) return RoundError();
  return Status::Ok();
}

}  // namespace ohio
