// Nonblocking alltoalls of a group spanning nodes, moved by the daemons with no help from the
// ranks (ohio_ialltoall across nodes). A rank starts a call in its ring as on one node
// (nonblocking_alltoall.h) and goes back to its work. Once every local rank has started call s and
// this node is through with the group's last round, the daemon plays every local rank's part of
// the call's rounds, exactly as the ranks would (client/libohio/across_nodes_alltoall.h), so the exchange
// with the peer daemons and every check of it stay the ones a blocking call has:
//   1. copy-in: each rank's row of the round into the SSB, read from the rank's send buffer
//      with process_vm_readv along the ranks' own copy plan (shm/plan/copy_plan.h);
//   2. arrival: M, the round's place in the call and arrived_round in every local slot; the
//      group then begins the round (RoundDriver::Begin) and the exchange runs, eager or announced;
//   3. copy-out: the node's own part from the SSB and each delivery as it lands, written into
//      each rank's receive buffer with process_vm_writev; consumed and done_round per slot, so
//      that credits and finished_round move as for ranks copying out themselves;
//   4. after the call's last round (or the first that failed, on every node alike): the
//      outcome and nonblocking_done = s, and the ranks are woken.
// An alltoallv (nonblocking_across_nodes_alltoallv.cc) goes in the vector rounds a blocking one takes
// (client/libohio/across_nodes_alltoallv.cc): the daemon reads each rank's tables once, writes them
// into the segment's count tables every round as the rank would, stages each rank's row (the
// first round) or its chunks (stream rounds), and copies out once every other node's block of
// the round is published, so the count check, the stream rounds and their verdicts are the
// blocking call's.
//
// A rank keeps its slot's round fields to itself except while it has nonblocking calls outstanding:
// its next blocking call first waits until they are complete (client/libohio/group_handle.cc), and
// takes the next round number from its slot. So a rank's nonblocking and blocking calls of one group
// stay in the order it made them, and the daemon and the rank never write the slot at once.
// Local ranks that disagree on M, or started an alltoall where others started an alltoallv, arrive
// with their own Ms (kVectorBytes for an alltoallv): the round fails on every node as a blocking
// call's would. A rank whose memory cannot be read or written (gone, or a buffer not
// mapped) fails the group on every node (culprit()).
//
// Progress engine thread only.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/status.h"
#include "daemon/engine/nonblocking_alltoall.h"
#include "shm/plan/node_level_design.h"
#include "shm/plan/copy_plan.h"
#include "shm/plan/eager_plan.h"
#include "shm/plan/exchange_plan.h"
#include "shm/plan/group_shape.h"
#include "shm/segment.h"
#include "shm/plan/staging.h"

namespace ohio {

class NonblockingAcrossNodesAlltoall {
 public:
  // `calls` is the group's ring side (which calls the ranks started, the ranks' memory, publishing).
  NonblockingAcrossNodesAlltoall(const Segment* segment, const GroupShape* shape, NodeLevelDesign algo, uint32_t node,
                                 NonblockingAlltoall* calls);

  // The group is filling `round` (no local rank has arrived at it yet). If the next nonblocking call
  // (or the next round of the one under way) can start, copies its rows in and arrives for
  // every local rank; true if it did. An error fails the group (culprit() may name a rank).
  Result<bool> Fill(uint32_t round);
  // After the exchange moved: copies out what is there to copy, ends rounds and calls; true if
  // anything changed. An error fails the group, as Fill's.
  Result<bool> Drain();
  // Whether a nonblocking call is being moved (a round of it may be under way).
  bool moving() const { return call_ != 0; }
  // The group rank whose memory could not be read or written, after an error of Fill or Drain.
  std::optional<uint32_t> culprit() const { return culprit_; }

 private:
  // Starts the next nonblocking call if every local rank started it; true if it did. Not OK if a
  // rank's alltoallv tables cannot be read (culprit()).
  Result<bool> StartCall();
  // --- alltoallv (nonblocking_across_nodes_alltoallv.cc) ---
  // Reads every local rank's nonblocking alltoallv tables into vector_tables_.
  Status ReadVectorTables();
  // Local rank l's table t (an NonblockingTable): one entry per group rank.
  const size_t* VectorTable(uint32_t l, uint32_t t) const {
    return vector_tables_.data() + (uint64_t{l} * kNonblockingTables + t) * shape_->size();
  }
  // Writes the count tables of `round`'s parity and stages every rank's part of the round.
  Status FillVector(uint32_t round);
  // Copies out the round once every other node's block is published; true if it did.
  Result<bool> DrainVector();
  Status CopyOutVector();
  Status CopyIn(uint32_t round);
  void Arrive(uint32_t round);
  // The node's own part of the round, from the SSB.
  Status CopyOutOnNode();
  Status CopyOutDelivery(const Delivery& d);
  // Runs `spans` between the segment at `shared` and local rank l's memory at `base`: reading,
  // src is in the rank's memory and dst in the segment; writing, the other way round.
  Status Transfer(uint32_t l, const std::vector<CopySpan>& spans, uint8_t* shared, uint64_t base, bool writing);
  uint8_t* SsbHalf(uint32_t round) const;
  void MarkDone();
  // The round is over here (copied out, or failed on every node): done_round for every rank,
  // then the next round of the call, or the call's end with its outcome.
  void EndRound(bool failed);
  void EndCall(const Status& outcome);
  uint64_t SendAddress(uint32_t l) const;
  uint64_t RecvAddress(uint32_t l) const;
  uint64_t BytesStarted(uint32_t l) const;
  // What local rank l arrives with for the call: its M, or kVectorBytes for an alltoallv.
  uint64_t ArrivalBytes(uint32_t l) const;

  const Segment* segment_;
  SegmentHeader* header_;
  const GroupShape* shape_;
  NodeLevelDesign algo_;
  uint32_t node_;
  uint32_t ranks_;
  NonblockingAlltoall* calls_;
  std::optional<uint32_t> culprit_;

  // The call under way (0: none) and the round of it under way.
  uint32_t call_ = 0;
  bool agreed_ = false;  // the local ranks started the same M
  bool eager_ = false;
  EagerLayout layout_;
  Staging staging_;
  uint64_t round_in_call_ = 0;
  uint32_t round_ = 0;  // the group's round the daemon arrived at for it, 0 before arriving
  bool local_copied_ = false;
  bool internode_read_ = false;  // an eager round: its inter-node algorithm read from the segment (once a block landed)
  uint32_t copied_ = 0;  // deliveries of the round copied out
  std::vector<Delivery> deliveries_;
  std::vector<iovec> local_, remote_;  // one transfer's pieces, reused

  // An alltoallv's: its rounds are the call's first (round_in_call_ 0) and its stream rounds.
  bool vector_ = false;
  std::vector<size_t> vector_tables_;  // local rank l's tables at l * kNonblockingTables * group size
  std::vector<CopySpan> vector_spans_;  // one copy's plan, planned into the same room each time
  bool own_staged_ = false;             // this node's part goes in the stream rounds
  std::vector<bool> streaming_nodes_;   // by node: its part goes in the stream rounds
  std::vector<uint64_t> block_offsets_;  // by node: where its block of the round starts in the SRB half
};

}  // namespace ohio
