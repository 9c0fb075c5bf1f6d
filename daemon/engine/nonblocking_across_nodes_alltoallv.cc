// The alltoallv side of NonblockingAcrossNodesAlltoall (nonblocking_across_nodes_alltoall.h): the daemon plays
// each local rank's part of the vector rounds exactly as client/libohio/across_nodes_alltoallv.cc does, with
// process_vm_readv/writev for the rank's memcpy. Each round:
//   1. (Fill) the count table of the round's parity for every rank, from its tables (the
//      exchange plans the node's puts and its share of the count digest from them when the
//      group begins the round); the rank's row staged in its region of the SSB half (the
//      first round, when the row fits its region) or its chunks of this stream round (when
//      the row does not fit, the first round's are stream round 0; after the first, when this
//      node's part streams); the arrival, with kVectorBytes, for every rank;
//   2. (Drain) once every other node's block of the round is published (only after every
//      node's share of the digest is in and they sum to zero) or the round failed: the node's
//      own pieces from the SSB half and each block's pieces, where each rank's receive table
//      puts them; then done_round. The first round's verdict says how many stream rounds follow
//      and whether this node's part is one of those streamed (vector_streamed); each other
//      node's header in the SRB says whether its part streams (its stream round 0 came in the
//      first round).
// A first round run as a hypercube finds the blocks where its inboxes' tables put them, and one
// whose verdict says the call goes again (shm/plan/vector_cube.h) copies nothing out: the call starts
// over in the next round.
// A round that fails (a pair whose counts disagree, anywhere in the group; a part that would
// take too many rounds) ends the call with the round's error, the same on every rank of every
// node, and the group goes on: nothing was copied out of it.
#include <string>
#include <type_traits>

#include "daemon/engine/nonblocking_across_nodes_alltoall.h"
#include "shm/segment_layout.h"
#include "shm/plan/vector_cube.h"
#include "shm/plan/vector_plan.h"
#include "shm/plan/vector_staging.h"

namespace ohio {

// The plans take the ranks' tables as size_t, the rank gives them as uint64_t.
static_assert(std::is_same_v<size_t, uint64_t>, "the ranks' tables are read as the plans' size_t");

Status NonblockingAcrossNodesAlltoall::ReadVectorTables() {
  const uint64_t per_rank = uint64_t{kNonblockingTables} * shape_->size();
  vector_tables_.resize(per_rank * ranks_);
  for (uint32_t l = 0; l < ranks_; ++l) {
    const uint64_t address =
        segment_->slot(l)->nonblocking[call_ % kNonblockingDepth].tables_address.load(std::memory_order_relaxed);
    auto memory = calls_->Memory(l);
    if (!memory.ok()) {
      culprit_ = shape_->rank_at(node_, l);
      return memory.status();
    }
    const uint64_t bytes = per_rank * sizeof(uint64_t);
    const std::vector<iovec> local = {{vector_tables_.data() + l * per_rank, bytes}};
    const std::vector<iovec> remote = {{reinterpret_cast<void*>(address), bytes}};
    const ssize_t n = memory.value()->Transfer(local, remote, false);
    if (n == static_cast<ssize_t>(bytes)) continue;
    culprit_ = shape_->rank_at(node_, l);
    return calls_->Refused(l, *memory.value(), false, "count tables", bytes, address);
  }
  return Status::Ok();
}

Status NonblockingAcrossNodesAlltoall::FillVector(uint32_t round) {
  const uint32_t size = shape_->size();
  const uint64_t region = VectorRegionBytes(*shape_, layout_, node_);
  uint8_t* ssb_half = SsbHalf(round);
  for (uint32_t l = 0; l < ranks_; ++l) {
    const size_t* send_bytes = VectorTable(l, kSendBytes);
    const size_t* send_at = VectorTable(l, kSendAt);
    const size_t* recv_bytes = VectorTable(l, kRecvBytes);
    CountEntry* table = segment_->count_table(l, round);
    for (uint32_t j = 0; j < size; ++j) table[j] = CountEntry{send_bytes[j], send_at[j], recv_bytes[j]};
    if (round_in_call_ == 0 && VectorRowFits(*shape_, table, region)) {
      PlanVectorCopyIn(*shape_, send_bytes, send_at, &vector_spans_);
    } else {
      // A row that does not fit stages its stream round 0 in the first round: the exchange sees
      // that from the same table, and the node's part streams.
      if (round_in_call_ != 0 && !own_staged_) continue;
      PlanVectorStreamCopyIn(*shape_, layout_, node_, round_in_call_, send_bytes, send_at, &vector_spans_);
    }
    if (Status s = Transfer(l, vector_spans_, ssb_half + l * region, SendAddress(l), false); !s.ok()) return s;
  }
  return Status::Ok();
}

Result<bool> NonblockingAcrossNodesAlltoall::DrainVector() {
  const bool failed = header_->failed_round.load(std::memory_order_acquire) == round_;
  if (!failed) {
    // Every other node's block published, as a rank waits for them.
    const uint64_t all_landed = uint64_t{round_} << 32 | (shape_->nodes() - 1);
    const uint64_t landed = header_->eager_landed[round_ & 1].load(std::memory_order_acquire);
    if ((landed >> 32) != round_ || landed < all_landed) return false;
    if (round_in_call_ == 0) {
      const VectorStreams streams =
          VectorStreamsOf(header_->vector_streamed[round_ & 1].load(std::memory_order_relaxed), round_);
      if (streams.again) {
        // Nothing of it is read: the call starts over, as the first round of the next.
        MarkDone();
        round_ = 0;
        return true;
      }
      own_staged_ = streams.own_staged;
      staging_.rounds = 1 + streams.rounds;
      PlanStreamingNodes(*shape_, layout_, node_, segment_->srb() + (round_ & 1) * layout_.srb_half, streams,
                         &streaming_nodes_);
    }
    if (Status s = CopyOutVector(); !s.ok()) return s;
  }
  EndRound(failed);
  return true;
}

Status NonblockingAcrossNodesAlltoall::CopyOutVector() {
  const NodeCounts counts{segment_->count_table(0, round_), shape_->size()};
  uint8_t* ssb_half = SsbHalf(round_);
  uint8_t* srb_half = segment_->srb() + (round_ & 1) * layout_.srb_half;
  // The first round carries the parts of the nodes that do not stream and stream round 0 of the
  // others'; the stream rounds the rest of those.
  const bool first = round_in_call_ == 0;
  const uint64_t stream_round = round_in_call_;
  const InterNodeAlgorithm internode = EagerInterNodeOf(header_->eager_internode[round_ & 1].load(std::memory_order_relaxed), round_);
  PlanVectorBlockOffsets(*shape_, layout_, node_, internode, srb_half, &block_offsets_);
  for (uint32_t l = 0; l < ranks_; ++l) {
    const size_t* recv_at = VectorTable(l, kRecvAt);
    for (uint32_t source = 0; source < shape_->nodes(); ++source) {
      const bool whole = !streaming_nodes_[source];
      if (whole && !first) continue;
      uint8_t* from = ssb_half;
      if (source == node_) {
        if (whole) {
          PlanVectorCopyOutOnNode(*shape_, node_, l, layout_, counts, recv_at, &vector_spans_);
        } else {
          PlanVectorStreamCopyOutOnNode(*shape_, node_, l, layout_, counts, stream_round, recv_at, &vector_spans_);
        }
      } else {
        from = srb_half + block_offsets_[source];
        if (whole) {
          PlanVectorCopyOutBlock(*shape_, node_, l, counts, source, recv_at, &vector_spans_);
        } else {
          PlanVectorStreamCopyOutBlock(*shape_, node_, l, layout_, counts, source, stream_round, recv_at,
                                       &vector_spans_);
        }
      }
      if (Status s = Transfer(l, vector_spans_, from, RecvAddress(l), true); !s.ok()) return s;
    }
  }
  return Status::Ok();
}

}  // namespace ohio
