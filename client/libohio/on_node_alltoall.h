// An alltoall of a group whose ranks are all on this node, settled by the ranks among
// themselves in the segment: the daemon is not on the path (it watches for deaths and
// timeouts, and folds the counters rank 0 keeps here into its own).
//
// Round k (numbered per group, one after another over calls):
//   1. a rank stages its row in SSB half k mod 2, or, for a large call, offers its send buffer
//      to be read in place (single_copy.h);
//   2. it publishes its M (and the offer) in its slot's entry for k's parity and its arrival;
//   3. it waits for every rank's arrival and reads every rank's M: all ranks read the same
//      slots, so all reach the same verdict, and an error carries the same text everywhere;
//   4. it copies its column out (from the SSB half, or straight from every rank's buffer,
//      after which it waits until everyone has read its own buffer before returning).
// Half k mod 2 is free again at k+2 without any further wait: a rank arrives at k+1 only
// after copying out of k, and nobody copies into k+2 before everyone has arrived at k+1.
#pragma once

#include <cstdint>
#include <vector>

#include "client/libohio/call_plan.h"
#include "client/libohio/round_waiter.h"
#include "client/libohio/stage_report.h"
#include "common/status.h"
#include "shm/plan/copy_plan.h"
#include "shm/plan/group_shape.h"
#include "shm/segment.h"
#include "shm/plan/vector_plan.h"

namespace ohio {

// An alltoallv as a rank passes it: for every rank j of the group, send_counts[j] bytes at
// send + send_displs[j] go to j, and recv_counts[j] bytes from j land at recv + recv_displs[j].
struct VectorCall {
  const uint8_t* send = nullptr;
  const size_t* send_counts = nullptr;
  const size_t* send_displs = nullptr;
  uint8_t* recv = nullptr;
  const size_t* recv_counts = nullptr;
  const size_t* recv_displs = nullptr;
};

class OnNodeAlltoall {
 public:
  OnNodeAlltoall(const Segment* segment, const GroupShape* shape, NodeLevelDesign algo, uint32_t local,
                const RoundWaiter* waiter, StageReport* report);

  // The next call; *next_round is the group's round counter, advanced by the rounds used.
  Status Alltoall(const uint8_t* send, uint8_t* recv, uint64_t bytes_per_rank, uint32_t* next_round);
  // A round without data that fails with kOptedOut on every rank.
  Status OptOut(uint32_t* next_round);
  // An alltoallv (client/libohio/on_node_alltoallv.cc): one round in which every rank copies what it
  // receives from the senders' regions of the SSB (small rows) or reads it straight from their
  // buffers (large ones), where the senders' count tables say.
  Status Alltoallv(const VectorCall& call, uint32_t* next_round);
  // The call just made took `took` on this rank (timed by the caller, who needs it too): local
  // rank 0 counts it in the segment's stats, for the daemon to fold in.
  void Count(uint64_t bytes_per_rank, const Status& result, std::chrono::nanoseconds took);
  // The same for the alltoallv just made (its bytes are in the count tables).
  void CountVector(const Status& result, std::chrono::nanoseconds took);

 private:
  Status Run(const uint8_t* send, uint8_t* recv, uint64_t m, uint32_t* next_round);
  // One round through the SSB half of its parity.
  Status StagedRound(const CallPlan& plan, uint64_t round, const uint8_t* send, uint8_t* recv, uint32_t k);
  // One round read straight from the other ranks' send buffers. *fall_back: not every rank
  // could offer its buffer, or a read was refused; the call then goes through the SSB.
  Status SingleCopyRound(const uint8_t* send, uint8_t* recv, uint64_t m, uint32_t k, bool* fall_back);
  void Arrive(uint32_t k, uint64_t m, uint64_t round_in_call, uint64_t rounds, const void* send_address);
  Status MeetEveryone(uint32_t k);
  Status Verdict(uint32_t k) const;
  // The first local rank that published no send buffer address for round k, or ranks_.
  uint32_t FirstWithoutOffer(uint32_t k) const;
  // Whether every rank of the node published the PID namespace this rank's pid is in (and it
  // is known): only then does a pid in a slot name that rank's process here.
  bool OnePidNamespace() const;
  // Turns reading in place off for the group for good, having found the ranks in different PID
  // namespaces in round k (every rank does it alike).
  void NeverReadInPlace(uint32_t k);
  void Done(uint32_t k, bool someone_waits);
  // Local rank 0's tally of a call: latency class by `class_bytes`, `bytes_local` moved.
  void Record(uint64_t class_bytes, uint64_t bytes_local, const Status& result, std::chrono::nanoseconds took);
  // Alltoallv: this rank's first fault reading round k, published before it is done.
  void RecordFault(uint32_t k, VectorFault kind, uint32_t source, uint64_t sent, uint64_t expected);
  // Once every rank is done with round k: the first fault any rank published, as the error every
  // rank returns.
  Status VectorOutcome(uint32_t k) const;
  // Alltoallv: where local rank l stages its row of round k.
  uint8_t* VectorRegion(uint32_t k, uint32_t l) const;
  // Alltoallv, once every rank has arrived at round k and the count digest's shares did not sum to
  // zero: the first pair that disagrees, the same on every rank.
  Status CountsDisagree(uint32_t k) const;

  const Segment* segment_;
  SegmentHeader* header_;
  const GroupShape* shape_;
  uint32_t local_;
  uint32_t ranks_;
  const RoundWaiter* waiter_;
  StageReport* report_;
  uint64_t half_bytes_;
  CallPlans plans_;
  uint64_t rounds_this_call_ = 0;
  uint64_t vector_bytes_ = 0;  // bytes of the last alltoallv (local rank 0 counts them), from the ranks' rows
  uint64_t vector_region_;     // SSB bytes of a half each rank may stage its alltoallv row in
  uint64_t vector_piece_slot_;  // bytes of a piece slot in such a region
  std::vector<VectorPairKeys> vector_keys_;  // this rank's halves of the count digest, per peer
};

}  // namespace ohio
