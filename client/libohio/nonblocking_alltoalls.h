// A rank's side of nonblocking alltoalls (daemon/engine/nonblocking_alltoall.h moves the data on one
// node, daemon/engine/nonblocking_across_nodes_alltoall.h across nodes). Starting a call writes the addresses of its buffers and M into the rank's
// slot and returns; the daemon moves the data once every local rank has started the call, while
// the ranks compute, and publishes the call's outcome. Completing a call is a look at
// nonblocking_done (or a sleep on the segment's futex): there is nothing left to copy.
//
// Calls are numbered from 1 per group, in the order the rank starts them; every rank starts the
// same calls in the same order (MPI's rule for collectives). At most kNonblockingDepth calls may be
// outstanding: starting one more first waits until the oldest has been moved, which needs every
// rank to have started it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "client/libohio/round_waiter.h"
#include "common/status.h"
#include "shm/segment.h"

namespace ohio {

class NonblockingAlltoalls {
 public:
  // `ring_every_start`: a start rings a sleeping daemon's doorbell even when other local ranks
  // have not started the call yet. A group across nodes needs it: the daemon watches a call's
  // stragglers (the group's timeout) only once it knows of a first start. On one node the daemon
  // watches its groups at every tick anyway, and only the last rank to start rings: nothing can
  // move before, and on an oversubscribed node each ring preempts the rank that rang.
  NonblockingAlltoalls(const Segment* segment, uint32_t local, const RoundWaiter* waiter, int doorbell_fd,
                  bool ring_every_start);

  // Starts the next call; *call is its number.
  Status Start(const uint8_t* send, uint8_t* recv, uint64_t bytes_per_rank, uint32_t* call);
  // Starts the next call as an alltoallv: `tables` is kNonblockingTables arrays of one entry per
  // group rank (shm/segment_layout.h), kept here until the daemon has moved the call.
  Status StartVector(const uint8_t* send, uint8_t* recv, std::vector<uint64_t> tables, uint32_t* call);
  // Whether the daemon has moved `call` (never waits). Once it has, Outcome tells how it went.
  bool Done(uint32_t call) const;
  // Waits until `call` is done.
  Status Await(uint32_t call) const;
  // Waits at most `most` for `call` (less if the group fails or the daemon goes); whether done.
  bool AwaitBriefly(uint32_t call, std::chrono::microseconds most) const {
    return waiter_->WaitBriefly([this, call] { return Done(call); }, most);
  }
  // The outcome of a done call, once: the call is forgotten.
  Status Outcome(uint32_t call);
  // The last call started (0 before the first).
  uint32_t last_started() const { return started_; }
  // Whether `call` was started and its outcome not yet taken.
  bool Outstanding(uint32_t call) const { return open_.count(call) != 0; }
  std::set<uint32_t> OutstandingCalls() const { return open_; }

 private:
  // The ring entry of `call` is about to be reused: keeps its outcome if nobody took it yet.
  void Keep(uint32_t call);
  Status Published(uint32_t call) const;
  Status StartEntry(const uint8_t* send, uint8_t* recv, uint64_t bytes_per_rank, std::vector<uint64_t> tables,
                   uint32_t* call);

  const Segment* segment_;
  SegmentHeader* header_;
  uint32_t local_;
  const RoundWaiter* waiter_;
  int doorbell_fd_;
  bool ring_every_start_;
  uint32_t started_ = 0;
  std::set<uint32_t> open_;             // started, outcome not yet taken
  std::map<uint32_t, Status> kept_;     // outcomes saved from reused ring entries
  // The tables of alltoallv calls not yet moved: the daemon reads them from this process.
  std::map<uint32_t, std::vector<uint64_t>> tables_;
};

}  // namespace ohio
