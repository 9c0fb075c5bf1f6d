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
//
// A call that is tested again and again (MPI_Test in a loop, or MPI_Wait in slices between the
// MPI library's progress) is waited for in many short looks: its deadline is kept here, not
// restarted by each look. It runs from the call's start, or from the last progress this rank
// saw the daemon make on its calls (a call done, a round played for it across nodes), whichever
// is later: a call queued behind others the daemon is moving is not timed out for their time.
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
  // Waits until `call` is done (one wait, at most the group's timeout and grace).
  Status Await(uint32_t call) const;
  // Whether the wait for `call` (not done) is over its deadline (see above): the error saying
  // who did not do what within the group's timeout, and that ohiod is stopped if it is.
  Status Overdue(uint32_t call);
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
  std::set<uint32_t> OutstandingCalls() const;

 private:
  // The ring entry of `call` is about to be reused: keeps its outcome if nobody took it yet.
  void Keep(uint32_t call);
  // Notes whether the daemon made progress since this rank last looked, and when it saw it.
  void NoteProgress();
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
  // Started, outcome not yet taken: when each was started.
  std::map<uint32_t, std::chrono::steady_clock::time_point> open_;
  // What this rank last saw of the daemon's progress (nonblocking_done, its slot's
  // arrived_round), and when it last saw either change.
  uint32_t seen_done_ = 0;
  uint32_t seen_round_ = 0;
  std::chrono::steady_clock::time_point progress_at_;
  std::map<uint32_t, Status> kept_;     // outcomes saved from reused ring entries
  // The tables of alltoallv calls not yet moved: the daemon reads them from this process.
  std::map<uint32_t, std::vector<uint64_t>> tables_;
};

}  // namespace ohio
