// An alltoall of a group spanning nodes, as one rank does it; the daemon moves the blocks.
//
// Eager call (the whole call is one round that fits half of every SRB, shm/plan/eager_plan.h):
//   1. stage the row in SSB half k mod 2 (free once this node is through with round k-2);
//   2. publish M and the arrival, ring the daemon's doorbell only if it sleeps: the daemon
//      sends this node's blocks at once, with M in their headers;
//   3. meet the node's other ranks in the segment and agree on M (a disagreement is the error
//      every rank of the node reaches by itself; the daemon tells the other nodes);
//   4. copy the node's own part out of the SSB, then each other node's block as the daemon
//      publishes it landed (it publishes only blocks whose header has this node's M), or take
//      the round's error (another node passed another M).
// Larger calls go in rounds that announce themselves (ROUND_READY) and use the whole SSB and
// SRB: wait until the SSB is free, stage, arrive, wait for the release, copy out the deliveries
// in order, telling the daemon how far each rank got (v3 reuses SRB halves within a round).
// Alltoallv (client/libohio/across_nodes_alltoallv.cc) goes in eager rounds planned from the count tables:
// one when the call fits, else a round that checks the counts (and carries the first slice of
// the parts that do not fit) and the stream rounds after it.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "client/libohio/call_plan.h"
#include "client/libohio/on_node_alltoall.h"
#include "client/libohio/round_waiter.h"
#include "client/libohio/stage_report.h"
#include "common/status.h"
#include "shm/plan/eager_plan.h"
#include "shm/plan/group_shape.h"
#include "shm/segment.h"

namespace ohio {

struct NodeCounts;

class AcrossNodesAlltoall {
 public:
  AcrossNodesAlltoall(const Segment* segment, const GroupShape* shape, NodeLevelDesign algo, uint32_t node, uint32_t local,
                 const RoundWaiter* waiter, int doorbell_fd, StageReport* report);

  Status Alltoall(const uint8_t* send, uint8_t* recv, uint64_t bytes_per_rank, uint32_t* next_round);
  Status Alltoallv(const VectorCall& call, uint32_t* next_round);
  Status OptOut(uint32_t* next_round);
  // Rounds the last alltoallv that passed its first round took.
  uint32_t last_vector_rounds() const { return last_vector_rounds_; }
  // The daemon played this rank's part of rounds for started calls since its last call: how the
  // last of them used the SSB is not known here, so the next round waits as after a whole-SSB one.
  void AfterDaemonRounds() { last_round_eager_ = false; }

 private:
  struct EagerPlan {
    bool used = false;
    uint64_t last_use = 0;
    CallPlan call;  // copy-in and the node's own copy-out, one round
    // By inter-node algorithm (shm/tables/internode_choice.h): the daemons say which one the round runs once its
    // first block lands; each is planned when first needed.
    struct Arrivals {
      bool planned = false;
      std::vector<std::vector<CopySpan>> copy_out;  // per delivery, parity 0
    };
    std::array<Arrivals, 3> by_internode;
  };
  const EagerPlan::Arrivals& ArrivalsFor(EagerPlan& plan, InterNodeAlgorithm internode);

  EagerPlan& EagerPlanFor(uint64_t m);
  Status Rounds(const uint8_t* send, uint8_t* recv, uint64_t m, uint32_t* next_round);
  Status EagerRound(EagerPlan& plan, const uint8_t* send, uint8_t* recv, uint32_t k);
  Status AnnouncedRound(const Staging& staging, uint64_t round, const uint8_t* send, uint8_t* recv, uint32_t k);
  Status CopyOutAnnounced(const Staging& staging, uint64_t round, uint32_t k, uint8_t* recv);
  // Waits until this node is through with round `through` (its puts out, its ranks done).
  Status AwaitFinished(uint32_t through);
  void Arrive(uint32_t k, uint64_t m, uint64_t round_in_call, uint64_t rounds);
  // Until the daemon has published `blocks` of eager round k's blocks from other nodes, or the
  // round failed.
  Status AwaitBlocksLanded(uint32_t k, uint32_t blocks);
  Status MeetNodeRanks(uint32_t k);
  Status Verdict(uint32_t k) const;
  bool RoundFailed(uint32_t k) const;
  Status RoundError() const;
  void Done(uint32_t k);
  void RingIfSleeping();
  // One round of an alltoallv, `part` of `parts`, up to the blocks landed: stage_row(table,
  // region) stages this rank's part of the row. Not OK (and done with the round) if the round
  // failed.
  // One alltoallv call, or (*again) its first round only, which the call must repeat.
  Status AlltoallvOnce(const VectorCall& call, uint32_t* next_round, bool* again);
  template <typename StageRow>
  Status VectorRound(const VectorCall& call, uint32_t k, uint32_t part, uint32_t parts, StageRow stage_row);
  // Copies out round k of an alltoallv: plan_from(source) plans into vector_spans_ the copies
  // from node `source`'s block (this node's: from the SSB half).
  template <typename PlanFrom>
  void CopyOut(const VectorCall& call, uint32_t k, PlanFrom plan_from);
  // Plans into vector_spans_ this rank's copies of stream round `stream_round` of node
  // `source`'s part (this node's: from the SSB half).
  void PlanStreamCopyOut(const NodeCounts& counts, uint32_t source, uint64_t stream_round, const size_t* recv_displs);
  void RunVectorCopies(const uint8_t* src, uint8_t* dst) const;

  const Segment* segment_;
  SegmentHeader* header_;
  const GroupShape* shape_;
  NodeLevelDesign algo_;
  uint32_t node_;
  uint32_t local_;
  const RoundWaiter* waiter_;
  StageReport* report_;
  int doorbell_fd_;
  EagerLayout layout_;
  bool last_round_eager_ = true;  // round 0 (none) uses no SSB at all
  std::vector<CopySpan> vector_spans_;  // an alltoallv's copies, planned into the same room each call
  uint32_t last_vector_rounds_ = 1;
  std::vector<bool> streaming_nodes_;  // an alltoallv's: by node, its part goes in stream rounds
  std::vector<uint64_t> block_offsets_;  // an alltoallv round's: where each node's block starts in the SRB half
  static constexpr size_t kCached = 4;
  std::array<EagerPlan, kCached> eager_plans_;
  uint64_t uses_ = 0;
};

}  // namespace ohio
