// Alltoallv of a group spanning nodes, as one rank does it: an eager round whose blocks the
// daemon plans from the node's count tables (shm/plan/vector_plan.h), and, when the call does not
// fit one round, the stream rounds that follow it (shm/plan/vector_staging.h). Each round:
//   1. wait until this node is through with round k-2 (its ranks read each other's tables of
//      that parity until then), write the count table of k's parity (the same every round of
//      a call), stage this round's part of the row in this rank's region of SSB half k mod 2,
//      arrive;
//   2. meet the node's other ranks;
//   3. wait until the daemon publishes every other node's block (it does so only once every
//      node's count digest is in and the counts agree) or the round's error, the same on every
//      rank of every node: a pair that disagrees, or a node whose part would take too many
//      rounds (kNotSupported: a caller can do the call another way);
//   4. copy out what the node's own ranks send this rank from their regions, and each block's
//      pieces for this rank, where its node's own tables put them.
// The first round stages the row as one round would, or, a row that does not fit its region,
// the row's stream round 0. If any node's part did not fit, the first round carried its stream
// round 0, and the daemon says how many stream rounds follow and whether this node's part is one
// of those that stream (vector_streamed); each other node's header in the SRB says whether its
// part came whole in the first round or streams.
// A first round the daemons ran as a hypercube (shm/plan/vector_cube.h) finds the blocks where its
// inboxes' size tables put them; if its verdict says the call goes again (a node's part did not
// fit the hypercube, or the counts disagree), nothing is copied out and the call starts over,
// pairwise.
#include <cstring>

#include "client/libohio/across_nodes_alltoall.h"
#include "shm/plan/vector_cube.h"
#include "shm/plan/vector_plan.h"
#include "shm/plan/vector_staging.h"

namespace ohio {

Status AcrossNodesAlltoall::Alltoallv(const VectorCall& call, uint32_t* next_round) {
  // A first round run as a hypercube that the counts or a node's part made unreadable goes
  // again, pairwise on every node: a second time would be a daemon's fault.
  for (int attempt = 0;; ++attempt) {
    bool again = false;
    Status s = AlltoallvOnce(call, next_round, &again);
    if (!s.ok() || !again) return s;
    if (attempt > 0) return Status(Code::kProtocol, "ohiod sent the same alltoallv back twice");
  }
}

Status AcrossNodesAlltoall::AlltoallvOnce(const VectorCall& call, uint32_t* next_round, bool* again) {
  const uint32_t k = (*next_round)++;
  const uint64_t region = VectorRegionBytes(*shape_, layout_, node_);
  // A row that does not fit stages its stream round 0: the daemon sees that from the same
  // table, and the node's part streams.
  Status s = VectorRound(call, k, 0, 1, [&](const CountEntry* table, uint8_t* my_region) {
    if (VectorRowFits(*shape_, table, region)) {
      PlanVectorCopyIn(*shape_, call.send_counts, call.send_displs, &vector_spans_);
    } else {
      PlanVectorStreamCopyIn(*shape_, layout_, node_, 0, call.send_counts, call.send_displs, &vector_spans_);
    }
    RunVectorCopies(call.send, my_region);
  });
  if (!s.ok()) return s;
  const VectorStreams streams = VectorStreamsOf(header_->vector_streamed[k & 1].load(std::memory_order_relaxed), k);
  if (streams.again) {
    // Nothing of it is read: the call starts over in the next round.
    Done(k);
    *again = true;
    return Status::Ok();
  }
  const uint32_t stream_rounds = streams.rounds;
  const bool own_staged = streams.own_staged;
  // Which nodes stream their part: read only when some do, so that a call of one round reads
  // nothing more than before. The first round carried their stream round 0.
  PlanStreamingNodes(*shape_, layout_, node_, segment_->srb() + (k & 1) * layout_.srb_half, streams,
                     &streaming_nodes_);
  last_vector_rounds_ = 1 + stream_rounds;
  const NodeCounts first_counts{segment_->count_table(0, k), shape_->size()};
  CopyOut(call, k, [&](uint32_t source) {
    if (streaming_nodes_[source]) {
      PlanStreamCopyOut(first_counts, source, 0, call.recv_displs);
    } else if (source == node_) {
      PlanVectorCopyOutOnNode(*shape_, node_, local_, layout_, first_counts, call.recv_displs, &vector_spans_);
    } else {
      PlanVectorCopyOutBlock(*shape_, node_, local_, first_counts, source, call.recv_displs, &vector_spans_);
    }
  });
  Done(k);
  for (uint32_t part = 1; part <= stream_rounds; ++part) {
    const uint32_t round = (*next_round)++;
    const uint64_t stream_round = part;
    s = VectorRound(call, round, part, 1 + stream_rounds, [&](const CountEntry*, uint8_t* my_region) {
      if (!own_staged) return;
      PlanVectorStreamCopyIn(*shape_, layout_, node_, stream_round, call.send_counts, call.send_displs,
                             &vector_spans_);
      RunVectorCopies(call.send, my_region);
    });
    if (!s.ok()) return s;
    const NodeCounts counts{segment_->count_table(0, round), shape_->size()};
    CopyOut(call, round, [&](uint32_t source) {
      if (!streaming_nodes_[source]) {
        vector_spans_.clear();
      } else {
        PlanStreamCopyOut(counts, source, stream_round, call.recv_displs);
      }
    });
    Done(round);
  }
  return Status::Ok();
}

template <typename StageRow>
Status AcrossNodesAlltoall::VectorRound(const VectorCall& call, uint32_t k, uint32_t part, uint32_t parts,
                                   StageRow stage_row) {
  // Half k mod 2 and the tables of k's parity last served round k-2 (or, after a round that
  // used the whole SSB, k-1).
  if (Status s = AwaitFinished(last_round_eager_ ? k - 2 : k - 1); !s.ok()) return s;
  last_round_eager_ = true;
  const uint32_t size = shape_->size();
  CountEntry* table = segment_->count_table(local_, k);
  for (uint32_t j = 0; j < size; ++j) {
    table[j] = CountEntry{call.send_counts[j], call.send_displs[j], call.recv_counts[j]};
  }
  const uint64_t region = VectorRegionBytes(*shape_, layout_, node_);
  stage_row(table, segment_->ssb() + (k & 1) * layout_.ssb_half + local_ * region);
  report_->Lap(Stage::kCopyIn);
  Arrive(k, kVectorBytes, part, parts);
  if (Status s = MeetNodeRanks(k); !s.ok()) return s;
  if (Status v = Verdict(k); !v.ok()) {
    Done(k);
    return v;
  }
  const uint32_t parity = k & 1;
  Status s = AwaitBlocksLanded(k, shape_->nodes() - 1);
  if (!s.ok()) return s;
  // Nothing is copied out of a round that failed: a call that fails in its first round moved
  // nothing.
  if (RoundFailed(k)) {
    report_->DaemonSteps(header_->stamps[parity], k);
    Done(k);
    return RoundError();
  }
  return Status::Ok();
}

template <typename PlanFrom>
void AcrossNodesAlltoall::CopyOut(const VectorCall& call, uint32_t k, PlanFrom plan_from) {
  const uint32_t parity = k & 1;
  plan_from(node_);
  RunVectorCopies(segment_->ssb() + parity * layout_.ssb_half, call.recv);
  report_->Lap(Stage::kCopyOutOnNode);
  const uint8_t* srb_half = segment_->srb() + parity * layout_.srb_half;
  // Written before the blocks were published: where they lie depends on it.
  const InterNodeAlgorithm internode = EagerInterNodeOf(header_->eager_internode[parity].load(std::memory_order_relaxed), k);
  PlanVectorBlockOffsets(*shape_, layout_, node_, internode, srb_half, &block_offsets_);
  for (uint32_t source = 0; source < shape_->nodes(); ++source) {
    if (source == node_) continue;
    plan_from(source);
    RunVectorCopies(srb_half + block_offsets_[source], call.recv);
  }
  report_->Lap(Stage::kCopyOutAcrossNodes);
  report_->DaemonSteps(header_->stamps[parity], k);
}

void AcrossNodesAlltoall::PlanStreamCopyOut(const NodeCounts& counts, uint32_t source, uint64_t stream_round,
                                       const size_t* recv_displs) {
  if (source == node_) {
    PlanVectorStreamCopyOutOnNode(*shape_, node_, local_, layout_, counts, stream_round, recv_displs, &vector_spans_);
  } else {
    PlanVectorStreamCopyOutBlock(*shape_, node_, local_, layout_, counts, source, stream_round, recv_displs,
                                 &vector_spans_);
  }
}

void AcrossNodesAlltoall::RunVectorCopies(const uint8_t* src, uint8_t* dst) const {
  for (const CopySpan& c : vector_spans_) std::memcpy(dst + c.dst, src + c.src, c.len);
}

}  // namespace ohio
