// A group as one rank sees it: the mapped segment, the doorbell, and the alltoall data path.
// Per collective the rank talks to the daemon only through its slot and the header, never
// through the socket: a group on one node needs no daemon on the path (on_node_alltoall.h); a
// group spanning nodes hands its blocks to the daemon (across_nodes_alltoall.h).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "client/libohio/control_connection.h"
#include "client/libohio/on_node_alltoall.h"
#include "client/libohio/nonblocking_alltoalls.h"
#include "client/libohio/across_nodes_alltoall.h"
#include "client/libohio/round_waiter.h"
#include "common/status.h"
#include "shm/handed_back.h"
#include "shm/plan/node_level_design.h"
#include "shm/plan/group_shape.h"
#include "shm/segment.h"

namespace ohio {

class GroupHandle {
 public:
  static Result<std::unique_ptr<GroupHandle>> Join(ControlConnection* connection, const control::JoinGroup& join);
  ~GroupHandle();

  Status Alltoall(const void* send, void* recv, uint64_t bytes_per_rank);
  bool spans_nodes() const { return shape_.nodes() > 1; }
  // Rounds the last alltoallv across nodes that passed its first round took (1 on one node).
  uint32_t last_vector_rounds() const { return across_nodes_ ? across_nodes_->last_vector_rounds() : 1; }
  // On one node staged or read in place (OnNodeAlltoall::Alltoallv); across nodes in eager
  // rounds (AcrossNodesAlltoall::Alltoallv), kNotSupported on every rank where it would take too many.
  Status Alltoallv(const VectorCall& call);
  // A nonblocking alltoall (client/libohio/nonblocking_alltoalls.h): started for the daemon to move, *call
  // numbers it; across nodes through the group's rounds (daemon/engine/nonblocking_across_nodes_alltoall.h).
  Status Ialltoall(const void* send, void* recv, uint64_t bytes_per_rank, uint32_t* call);
  // A nonblocking alltoallv, started and numbered like Ialltoall (the same calls, in one order);
  // the counts and displacements are copied, the buffers must stay until it is complete.
  // Across nodes the daemon plays the vector rounds a blocking Alltoallv takes
  // (daemon/engine/nonblocking_across_nodes_alltoall.h).
  Status Ialltoallv(const VectorCall& vector, uint32_t* call);
  // Whether `call` is complete, waiting for it at most `within`; once it is, its outcome is
  // returned and the call forgotten. A call that cannot complete any more (the group failed,
  // the daemon's connection closed, or the call's deadline passed: the group's timeout since it
  // was started or since the daemon last made progress, client/libohio/nonblocking_alltoalls.h) is
  // complete with that error, however short each test: kTimeout names who did not do what
  // within N ms, and that ohiod is stopped if it is (the daemon is then given up on, as after a
  // blocking call).
  Status IalltoallTest(uint32_t call, bool* done, std::chrono::microseconds within);
  // Waits until `call` is complete, by the same deadline; its outcome, and the call is forgotten.
  Status IalltoallWait(uint32_t call);
  // Before the group is left: waits for every nonblocking call still outstanding and returns
  // their outcomes by call.
  std::map<uint32_t, Status> SettleIalltoalls();
  // Takes part in the group's next call without data, so that it fails with kOptedOut on every
  // rank of every node (who may then all do the exchange some other way, together).
  Status OptOut();
  // The group's standing: ok, or why no call can succeed any more (nothing is waited for).
  Status Check() const;
  // Whether Check() would be ok, without building its Status: on the path of every call an MPI
  // binding hands back to the library.
  bool Usable() const;
  // The selection table (shm/tables/selection_table_text.h) and transport ohiod handed over at
  // join, once every node's daemon has met the others: the daemons compare the table's digest
  // then, so what is returned is the table of every node of the group. A group whose nodes
  // disagree fails here, naming both.
  Status Selection(const std::string** table, const std::string** transport);
  // A call of `function` every rank handed to the MPI library for `reason`, counted in the
  // segment by the node's local rank 0 (shm/handed_back.h).
  void CountHandedBack(size_t function, HandBackReason reason, uint64_t calls);
  Status Leave();

 private:
  GroupHandle() = default;
  // Before a nonblocking call is started: the group has started.
  Status ReadyForNonblocking();
  // Whether `call`, not done, may still complete: ok, or why it never will.
  Status NonblockingStanding(uint32_t call);
  // Before a blocking call of a group spanning nodes: waits until this rank's started calls are
  // complete (the daemon played its part of their rounds in its slot) and goes on from the
  // round the daemon arrived at last.
  Status SettleNonblocking();
  // Waits, before a group's first call, until every node's daemon has met the others.
  Status AwaitGroupStart();
  // The same before a call that moves data: the segment's pages faulted in first, once.
  Status AwaitGroupStartToMoveData();
  // A call's outcome: errors that leave the group usable are returned; the others also break
  // it for this rank.
  Status Finish(Status s);
  // This rank's own arguments are wrong (`why`): it still takes part in the call, without
  // data, so that every other rank fails at once with kOptedOut naming it rather than waiting
  // for it until the group's timeout, and the group stays usable. Returns `why`.
  Status RefuseArguments(Status why);

  ControlConnection* connection_ = nullptr;
  std::string key_;
  GroupShape shape_;
  uint32_t node_ = 0;
  uint32_t local_ = 0;
  NodeLevelDesign design_ = NodeLevelDesign::kV3;
  std::string selection_table_;
  std::string transport_;
  Segment segment_;
  int doorbell_fd_ = -1;
  uint32_t next_round_ = 1;
  RoundWaiter waiter_;
  StageReport stages_{StageReport::Requested()};  // OHIO_STAGE_TIMES
  uint32_t rank_ = 0;                             // in the group, for the stage report
  std::unique_ptr<OnNodeAlltoall> on_node_;        // a group on one node
  std::unique_ptr<AcrossNodesAlltoall> across_nodes_;  // a group spanning nodes
  std::unique_ptr<NonblockingAlltoalls> nonblocking_;       // nonblocking calls
  uint32_t settled_call_ = 0;                     // the last started call whose rounds are counted
  Status broken_;  // set once the group can no longer be used by this rank
  bool populated_ = false;  // the segment's pages faulted in (AwaitGroupStartToMoveData)
};

}  // namespace ohio
