// A call a communicator hands to the MPI library for the same reason as its last one, decided
// in a few loads and branches before anything else of the call: installing ohio must cost a
// program nothing where ohio does not serve it (docs/PERFORMANCE.md, "Calls handed back").
//
// Two such calls, alike on every rank (so no rank needs to meet the others):
//  - the selection table handed back the last call of this function with the same bytes per
//    rank pair (a function whose bytes are the same on every rank: MPI_Alltoall, MPI_Ialltoall);
//  - the communicator has no group (its set-up found no ohiod, OHIO_DISABLE, or the group
//    closed) and none to join: every later call is the library's.
// Neither takes a lock, makes a system call or sends a message: the counts are plain counters
// of the communicator's state (its calls are one thread's at a time), added to OHIO_STATS's
// tallies and ohiod's counters every kFlushEvery calls, when the verdict changes, and when the
// group is left (FlushHandBacks). Anything else (the first call, a verdict to look up, a
// nonblocking call outstanding, a call that must fail, a group that closed) takes the full path
// (client/mpi/served_calls.h BeginCall), which decides it as before.
#pragma once

#include <atomic>
#include <cstdint>

#include "client/mpi/call_selection.h"
#include "client/mpi/mpi_shim_state.h"
#include "shm/tables/selection_table.h"

namespace ohio::shim {

// Counted hand-backs are added to the tallies and ohiod's counters at least this often, so that
// ohioctl shows a running job's counts at most this many calls behind.
constexpr uint64_t kFlushEvery = 4096;

// Adds what `st` counted and has not yet added, to OHIO_STATS's tallies and (while it has a
// group, or its join is deferred) ohiod's counters. Before the group is left or joined, the
// verdicts change, and the report.
void FlushHandBacks(CommState* st);
// Adds `calls` hand-backs of OHIO_FUNCTION_* `function` for `reason` to ohiod's counters: through
// the group's segment (which counts them once per node), or, while the join is deferred, by the
// node's first rank of the communicator in its connection's hand-back page
// (ohio_client_count_handed_back_calls). Either is a few stores: no lock, no system call.
// Nothing for a communicator without either, or a function of -1.
void CountInDaemon(CommState* st, int function, ohio::HandBackReason reason, uint64_t calls);
// The same for one kept verdict.
void FlushKeptVerdict(CommState* st, CommState::KeptVerdict& kept);
// Finds, under the process's lock, where the calls of kFunctions[function] that `st` hands back
// for lack of a group are counted among OHIO_STATS's reasons (CommState::no_group_reason).
void RememberNoGroupReason(CommState* st, int function);

// Whether the group is still open (ohio_group_usable): no system call while the daemon was seen
// lately (client/libohio/group_handle.h Check).
bool GroupStillOpen(CommState* st);

// True: the call (of kFunctions[function], the table's `selected`, `bytes_per_pair` per rank pair)
// is handed to the library as the last one was, counted; the caller runs the library. False: the
// full path decides.
inline bool HandsBackAtOnce(CommState* st, FunctionIndex function, ohio::SelectedFunction selected,
                            uint64_t bytes_per_pair) {
  CommState::KeptVerdict& kept = st->kept_verdicts[static_cast<size_t>(selected)];
  if (kept.serve || kept.function_index != function || kept.bytes != bytes_per_pair ||
      st->calls + 1 == st->failing_call || st->nonblocking_outstanding.load(std::memory_order_relaxed) != 0 ||
      (st->group == nullptr ? !st->join_deferred : !GroupStillOpen(st))) {
    return false;
  }
  ++st->calls;
  if (++kept.pending >= kFlushEvery) FlushKeptVerdict(st, kept);
  return true;
}

// True: the communicator has no group, so the call (of kFunctions[function]) is the library's,
// counted; the caller runs the library. False: the full path decides.
inline bool NoGroupHandsBackAtOnce(CommState* st, FunctionIndex function) {
  if (st->group != nullptr || st->join_deferred || st->calls + 1 == st->failing_call) return false;
  ++st->calls;
  if (++st->handed_back_pending[function] >= kFlushEvery) FlushHandBacks(st);
  return true;
}

// For a call shaped as MPI_Alltoall's (MPI_Alltoall, MPI_Ialltoall, MPI_Alltoall_init's start), on
// a communicator whose state is `st` (null: not set up yet): whether it goes to the library at once.
inline bool AlltoallGoesToLibraryAtOnce(CommState* st, FunctionIndex function, ohio::SelectedFunction selected,
                                        bool in_place, int sendcount, MPI_Datatype sendtype, int recvcount,
                                        MPI_Datatype recvtype) {
  return st != nullptr &&
         (NoGroupHandsBackAtOnce(st, function) ||
          HandsBackAtOnce(st, function, selected, PairBytes(in_place, sendcount, sendtype, recvcount, recvtype)));
}

}  // namespace ohio::shim
