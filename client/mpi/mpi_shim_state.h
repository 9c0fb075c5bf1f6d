// MPI collectives through ohiod for unmodified MPI programs, by either binding
// (client/mpi/served_calls.h): the LD_PRELOAD shim, built once per MPI (the ABIs differ), or Open
// MPI's collective component; everything ohio cannot serve goes to the MPI library. This header
// is the state kept per process and per communicator, shared by the files that each serve one
// MPI function (client/mpi/serve_alltoall.cc, client/mpi/serve_alltoallv.cc, ...).
//
// Consistency is the whole difficulty: the ranks of a communicator must all take ohio or all
// take PMPI in a given call, or they wait for each other forever.
//  - Setting up a communicator is collective (it happens inside its first served call): the
//    ranks learn in one PMPI_Allgather whether every one of them can use ohio, each rank's node
//    name, the group key (rank 0's), the digest of the selection table each one's daemon gives
//    new groups, and the OHIO_* settings every call must take alike (OHIO_SELECTION=always and
//    OHIO_IALLTOALL_MIN_BYTES on any rank count for all).
//  - Which calls ohio serves is decided per call from that selection table
//    (client/mpi/call_selection.h), alike on every rank: every rank holds the same table and
//    shape, and the call's bytes where they are the same everywhere. A vector call whose verdict
//    depends on bytes that differ between ranks is the one exception: a rank whose own bytes say
//    "library" opts out (below), which needs the group.
//  - The group is joined at the first call the table serves, by every rank in that call
//    (client/mpi/deferred_join.h): a communicator whose calls all go to the library costs ohiod
//    nothing. From then on the group's table decides. Where the daemons offer no table before a
//    join (an older ohiod) or the ranks' digests differ, the set-up joins at once and the ranks
//    agree with PMPI_Allreduce that every one of them joined and holds the group's table (the
//    daemons of a group whose tables differ fail it, naming both).
//  - A reason to hand a call back that only one rank sees (a datatype without a layout) is resolved
//    through ohio itself in a blocking call: that rank opts out of the call (ohio_alltoall_opt_out),
//    every rank of every node gets OHIO_ERR_OPTED_OUT, and all of them call the PMPI_ function
//    together. A nonblocking call cannot be resolved so (the others have started it and
//    returned): its rank has the MPI library pack the datatype (client/mpi/mpi_library_pack.h).
//  - A group already closed when a call starts (its daemon or a peer's died) is seen closed by
//    every rank in that call: all hand it back to the library, with correct data, and so do all later calls.
//  - A failure (the group closed before a call, or failed in it) is seen by the ranks in the
//    same call, or some of them one call later: a rank whose call failed does not reach ohio
//    with the next, so the others cannot complete that one. So the ranks that see it meet on a
//    duplicate of the communicator made at set-up (the application's own collectives on the
//    communicator cannot match these), agree on the latest call any of them was in, and:
//    - where some ranks completed the call before it through ohio and others failed in it, the
//      first send the others their blocks of it again in the library, from the copy the shim
//      keeps while errors return to the program (client/mpi/mpi_call_replay.h), so every rank
//      returns its correct result; without that copy (a fatal error handler, which ends the
//      job anyway) the ranks that failed in it get MPI_ERR_OTHER;
//    - the ranks in the latest call run it in the MPI library with the arguments they hold (an
//      in-place buffer ohio may have written into is put back from the same copy first), or,
//      if one of them cannot, that call fails with MPI_ERR_OTHER on every rank.
//    Every later call goes to the library on every rank. No rank gets success with bytes it
//    did not receive, and no two ranks run different calls together.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "client/mpi/mpi_call_replay.h"
#include "client/mpi/mpi_type_layout.h"
#include "client/mpi/opt_out_run.h"
#include "client/libohio/ohio.h"
#include "shm/handed_back.h"
#include "shm/tables/selection_table.h"

namespace ohio::shim {

struct CommState {
  // libohio serves a group from one thread at a time. Calls on one communicator come from one
  // thread at a time (MPI's rule), but under MPI_THREAD_MULTIPLE another thread may test one of
  // its nonblocking calls meanwhile (Open MPI's progress runs every outstanding request's test
  // from whichever thread waits). Whoever uses the group holds this (GroupInUse); a test only
  // tries, and leaves the request for a later pass if the group is in use: it never waits, and
  // the communicator's own call never waits for a test longer than one test takes.
  std::atomic<bool> group_in_use{false};
  // Nonblocking calls started through the group and not yet finished: while there are any, a
  // test may run from another thread, and the start of a call holds the group to look at it.
  std::atomic<int> nonblocking_outstanding{0};
  ohio_group* group = nullptr;  // null: this communicator's calls are handed back, for `why`,
  std::string why;              // unless its join is deferred (below)
  // Set up without a group: every rank holds the same table (its daemon's for new groups, agreed
  // by digest at set-up), decides every call by it alike, and joins the group at the first call
  // it serves (client/mpi/deferred_join.h). A communicator whose calls are all handed back never
  // joins one. `pending` describes the group to join, as agreed at set-up.
  bool join_deferred = false;
  struct PendingJoin {
    unsigned char key[OHIO_KEY_BYTES] = {};
    uint32_t size = 0, rank = 0, ppn = 0;
    std::vector<std::string> nodes;
    std::vector<uint32_t> rank_node;
  };
  PendingJoin pending;
  // Whether this rank is the first of its node in the communicator: while there is no group, it
  // counts the communicator's hand-backs in ohiod's counters (a group counts them once per node),
  // in the hand-back page of `client`, the connection its set-up went through (valid until
  // MPI_Finalize, even once its daemon is gone).
  bool counts_for_node = false;
  ohio_client* client = nullptr;
  // A duplicate of the communicator where the ranks agree after a failure (nothing else uses it),
  // made when the first failure is found (EnsureAgreement).
  MPI_Comm agreement = MPI_COMM_NULL;
  // Calls of the served functions on this communicator so far (the same on every rank, by MPI's
  // rule that collectives are called in the same order), and the one that must fail on every
  // rank because ranks in it could not run it in the library (0: none).
  uint64_t calls = 0;
  uint64_t failing_call = 0;
  std::string failing_why;
  // Which calls the group serves (client/mpi/call_selection.h): the table and the
  // communicator's shape as the table sees it, or every call it can (OHIO_SELECTION=always on
  // some rank, agreed at set-up).
  ohio::SelectionTable table;
  ohio::SelectionShape shape;
  bool selection_always = false;
  // The table's verdict for the last bytes of each function (by SelectedFunction) and the
  // counters a hand-back adds to (client/mpi/call_selection.h HandedToLibraryByTable): a program
  // repeating one call pays a comparison per call, not the table's lookup, its reason's
  // formatting and two map lookups by name, which cost as much as a small call on one node.
  struct KeptVerdict {
    const char* function = nullptr;  // OHIO_STATS's name of the function; null: nothing kept
    int function_index = -1;         // its place in kFunctions
    uint64_t bytes = 0;
    bool serve = true;
    int ohio_function = 0;           // OHIO_FUNCTION_*
    // OHIO_STATS's counts the hand-back adds to: atomics shared with the communicators of
    // other threads, so that a hand-back takes no lock.
    std::atomic<long>* handed_back = nullptr;
    std::atomic<long>* by_table = nullptr;
    std::atomic<long>* reason_count = nullptr;
    // Hand-backs of this verdict not yet added to the counts above and to ohiod's
    // (client/mpi/hand_back_at_once.h): a plain count, this communicator's calls being one
    // thread's at a time.
    uint64_t pending = 0;
  };
  KeptVerdict kept_verdicts[ohio::kSelectedFunctionCount];
  // Calls of each of kFunctions (by index) that went to the library because the communicator
  // has no group (for `why`), not yet added to OHIO_STATS's counts (hand_back_at_once.h).
  static constexpr int kMaxFunctions = 8;
  uint64_t handed_back_pending[kMaxFunctions] = {};
  // Where those are added in OHIO_STATS's reasons (`why`'s count for each function): found once,
  // under the process's lock, by the call that takes the full path (RememberNoGroupReason), so
  // that adding them takes no lock. Cleared when `why` changes.
  std::atomic<long>* no_group_reason[kMaxFunctions] = {};
  // The blocking vector calls' runs of calls a rank opted out of (client/mpi/opt_out_run.h),
  // reached only through OptOutRunOf.
  OptOutRun opt_out_runs[2];
  // Set on some rank, OHIO_IALLTOALL_MIN_BYTES alone decides MPI_Ialltoall (calls of fewer bytes
  // per rank go to the library; agreed at set-up: the largest any rank asked for) and
  // MPI_Ialltoallv (served), instead of the table.
  bool ialltoall_min_set = false;
  uint64_t ialltoall_min_bytes = 0;
  uint32_t nodes = 0;  // the group's
  // MPI_Alltoallv's counts and displacements in bytes, for ohio.
  std::vector<size_t> send_bytes, send_at, recv_bytes, recv_at;
  // Where calls with non-contiguous datatypes are packed for ohio and unpacked from it.
  std::vector<uint8_t> send_packed, recv_packed;
  // MPI_Alltoallw's per-rank datatypes, as layouts.
  std::vector<const ohio::TypeLayout*> send_layouts, recv_layouts;
  // The send sides of the current call and the one before, by call parity, while they are kept
  // (client/mpi/mpi_call_replay.h).
  RetainedSend retained[2];
};

// What the process keeps for all its communicators. Under MPI_THREAD_MULTIPLE, threads call
// collectives on different communicators at once (calls on one communicator are ordered by the
// program, so a CommState is only ever used by one thread at a time): what is here is either
// fixed once Initialise has run, atomic, or guarded by a mutex held for bookkeeping only, never
// across a call to another rank or a wait for one.
struct Process {
  Process();
  // Set once by Initialise (std::call_once), read-only after.
  std::once_flag initialise_once;
  std::atomic<bool> initialised{false};
  bool disabled = false;
  bool quiet = false;
  bool stats = false;
  // Whether a failed call goes through the communicator's error handler here. The shim's calls
  // do; the Open MPI component's return their error to the MPI function, which does it. Set
  // before any call (the component's init_query).
  bool call_errhandler = true;
  // Which binding serves the process, named in OHIO_STATS's report.
  const char* binding = "the LD_PRELOAD shim (libohio_mpi)";
  // OHIO_IALLTOALL_MIN_BYTES: from which bytes per rank ohiod moves an MPI_Ialltoall, instead of
  // the selection table's verdict (set: the deployer knows whether ohiod has a core to overlap
  // with).
  bool ialltoall_min_set = false;
  uint64_t ialltoall_min_bytes = 0;
  // OHIO_SELECTION=always: serve every call ohio can, whatever the selection table says.
  bool selection_always = false;

  // Guards the connection to ohiod (up to `states`): held while a set-up connects again, which
  // waits for the node's daemon's hello (not for another rank), so apart from `mu`.
  std::mutex connection_mu;
  ohio_client* client = nullptr;
  std::string no_client;  // why there is no connection to ohiod
  // Whether a communicator set up later tries to connect again: nothing listened on the socket
  // (ohiod not yet started, or between an upgrade's stop and start), or the daemon closed the
  // connection (it exited or was restarted). Not after a daemon that did not answer in time.
  bool connect_again = false;
  // Connections to daemons that have gone, kept until finalize: the groups joined through
  // them are left first (and a thread still joining through one holds a valid pointer).
  std::vector<ohio_client*> gone_clients;

  // Guards everything below it: the communicators' states, the reasons' tallies, the one
  // warning. Held for bookkeeping only.
  std::mutex mu;
  bool warned = false;
  std::set<CommState*> states;
  // The selection table the last set-up parsed, and its text: a daemon hands every group the
  // same table, and a program that makes a communicator per step would parse it each time.
  std::string parsed_table_text;
  ohio::SelectionTable parsed_table;
  // Per function, for OHIO_STATS: one entry for each of kFunctions, made by the constructor and
  // never added to, so that finding one takes no lock. handed_back counts every call the
  // library ran, by_table those of them the selection table handed it (their reasons in
  // table_reasons, the others' in reasons: both under `mu`).
  struct Tally {
    std::atomic<long> served{0};
    std::atomic<long> handed_back{0};
    std::atomic<long> by_table{0};
    std::map<std::string, std::atomic<long>> reasons;
    std::map<std::string, std::atomic<long>> table_reasons;
  };
  std::map<std::string, Tally> tallies;
};

// The communicator's own call holds its group for its whole length (a wait for other ranks
// included: only tests contend, and they only try). Not on the path of a call the selection
// table hands back, which takes nothing.
class GroupInUse {
 public:
  explicit GroupInUse(CommState* st);
  ~GroupInUse() { st_->group_in_use.store(false, std::memory_order_release); }
  GroupInUse(const GroupInUse&) = delete;
  GroupInUse& operator=(const GroupInUse&) = delete;
  // For a test: holds the group if nobody does (then Release it), else false at once. False too
  // if this very thread holds it (a test run from inside the communicator's own call, by Open
  // MPI's progress in a library call of the agreement).
  static bool TryHold(CommState* st) { return !st->group_in_use.exchange(true, std::memory_order_acquire); }
  static void Release(CommState* st) { st->group_in_use.store(false, std::memory_order_release); }

 private:
  CommState* st_;
};

// The functions the shim serves, in the order OHIO_STATS reports them.
extern const char* const kFunctions[];
extern const int kFunctionCount;
// The place of `function` in kFunctions (any other name is a bug: it aborts).
int IndexOf(const char* function);
// Their places in kFunctions.
enum FunctionIndex : int {
  kIndexAlltoall = 0,
  kIndexAlltoallv = 1,
  kIndexAlltoallw = 2,
  kIndexIalltoall = 3,
  kIndexIalltoallv = 4,
  kIndexAlltoallInit = 5,
};

Process& P();

// The tally of one of kFunctions (any other name is a bug: it aborts).
Process::Tally& TallyOf(const char* function);

void Served(const char* function);
void HandedBack(const char* function, const std::string& why);
// A call the selection table handed to the library alike on every rank (`why` names its verdict).
void HandedBackByTable(const char* function, const std::string& why);
// A call every rank hands to the library for `reason`, counted in ohiod's counters (by the
// first rank of each node: shm/handed_back.h).
void CountHandedBack(CommState* st, const char* function, ohio::HandBackReason reason);
// OHIO_FUNCTION_* of an OHIO_STATS function name (MPI_Alltoall_init's starts are MPI_Ialltoall's
// calls in ohiod's counters), -1 for none.
int OhioFunctionNumber(const char* function);

// Reads the OHIO_* environment and connects to ohiod, once per process (the first thread to
// call it does; any other waits until it has).
void Initialise();

// Whether a job at MPI_THREAD_MULTIPLE is served: unless OHIO_SERVE_THREAD_MULTIPLE=0.
bool ServeThreadMultiple();

// Collective over comm, in its first served call: one PMPI_Allgather. Where every rank's daemon
// offers the same selection table, the join waits for the first call the table serves
// (client/mpi/deferred_join.h); otherwise the ranks join a group for it now, or record why every
// rank hands its calls back. `first_bytes`: that call's bytes per rank, which size a group joined
// now (they grow with later calls: ohio.h). `keep` hands the new state to the binding before
// any collective call of the set-up, which finds it there if it comes back to ohio.
CommState* SetUp(MPI_Comm comm, uint64_t first_bytes, const std::function<void(CommState*)>& keep);

// The connection to this node's ohiod a join goes through now (a daemon that replaced a gone
// one is connected to first), or null where there is none.
ohio_client* ClientToJoinThrough();

// Leaves the state's group, frees its agreement communicator, forgets it.
void Release(CommState* st);

// While one lives, the communicator being created is ohio's own (the agreement duplicate): a
// binding that is asked to serve a new communicator (the Open MPI component's comm_query)
// leaves it to the MPI library, so ohio's own collectives never come back to ohio.
class InternalCommunicator {
 public:
  InternalCommunicator() { creating_ = true; }
  ~InternalCommunicator() { creating_ = false; }
  InternalCommunicator(const InternalCommunicator&) = delete;
  InternalCommunicator& operator=(const InternalCommunicator&) = delete;
  static bool Creating() { return creating_; }

 private:
  // Per thread: the communicator a binding is asked about is created by the thread that asks
  // (MPI_Comm_dup runs the component's comm_query in the caller), and another thread's user
  // communicator created meanwhile is the program's, to be served.
  static thread_local bool creating_;
};

// Leaves the group: this communicator's calls are handed back from now on, for `why`.
void Close(CommState* st, const std::string& why);

// What this rank decides for a call from its own arguments, before it acts on it: the layouts of
// the call's two datatypes (in place: the receive type's for both) that the call is served
// with, or why this rank cannot pass the call to ohio (`why` set; then it opts out, OptOut
// below). Deciding apart from doing keeps the reasons, counted per function in OHIO_STATS, the
// same for every function of one shape.
struct CallLayouts {
  const ohio::TypeLayout* send = nullptr;
  const ohio::TypeLayout* recv = nullptr;
  const char* why = nullptr;
};
// The two datatypes' layouts, or why one has none.
CallLayouts LayoutsOf(bool in_place, MPI_Datatype sendtype, MPI_Datatype recvtype);
// The decision for a call shaped as MPI_Alltoall's (and MPI_Ialltoall's): its layouts, or why
// not (a datatype without a layout, send and receive sizes that differ).
CallLayouts ServableLayouts(bool in_place, int sendcount, MPI_Datatype sendtype, int recvcount, MPI_Datatype recvtype);

// Counts a call of a served function on `comm` (before anything else in it). True if this call
// is one the ranks agreed must fail everywhere: *rc is then its error, already through the
// communicator's error handler.
bool CountCall(CommState* st, MPI_Comm comm, const char* function, int* rc);

// Whether the group closed or failed before this call (this rank has not contributed to it):
// *why says why.
bool ClosedBefore(CommState* st, std::string* why);

// What the ranks' agreement (above) decided for this rank's call.
enum class Agreed {
  kRunInLibrary,  // every rank in it runs it in the MPI library
  kFail,          // it fails here (MPI_ERR_OTHER, through the communicator's error handler)
  kRunAgain,      // the others completed it through ohio and sent this rank its blocks again
};

// After the group closed or failed in this call (`why`), the ranks' agreement. `replayable`:
// whether this rank can run the call in the library (it holds the call's arguments as given,
// not an in-place buffer ohio may have written into and that was not kept). `delivery`: where
// this rank receives the call if the others completed it (null: it cannot). The group is closed
// either way: every later call goes to the library.
Agreed AgreeAfterFailure(CommState* st, const std::string& why, bool replayable, const Delivery* delivery);

// Prints why `function` failed; returns `mpi_error`.
int Reported(const char* function, const std::string& why, int mpi_error);

// A failure of this call through the communicator's error handler (by default the job aborts,
// with the reason printed).
int FailCall(MPI_Comm comm, const char* function, const std::string& why);

// Makes st->agreement, the duplicate of `comm` the agreement runs on, unless there is one. Called
// where a failure is found, inside a call every rank of `comm` makes (a call's start, never a
// wait another thread may make beside a collective on `comm`), so that the duplicate is made at
// the same point of `comm`'s collectives on every rank. A communicator whose group never fails
// never pays for one (an MPI_Comm_dup is a large part of a new communicator's first call).
void EnsureAgreement(CommState* st, MPI_Comm comm);

// The group closed or failed in this call: the agreement, then the library (`hand_back`),
// the call's blocks received again, or the error.
template <typename HandBackToLibrary>
int AfterFailure(CommState* st, MPI_Comm comm, const char* function, const std::string& why, bool replayable,
                 HandBackToLibrary hand_back, const Delivery* delivery = nullptr) {
  EnsureAgreement(st, comm);
  switch (AgreeAfterFailure(st, why, replayable, delivery)) {
    case Agreed::kRunInLibrary:
      return hand_back(why);
    case Agreed::kRunAgain:
      HandedBack(function, why + "; the others, who had completed it, sent this call again in the MPI library");
      return MPI_SUCCESS;
    case Agreed::kFail:
      break;
  }
  return FailCall(comm, function, why);
}

// The group failed while ohio had the call (its reason from ohio_last_error()). The reason is
// printed once: by FailCall if the call fails, as the hand-back's reason if it is replayed.
template <typename HandBackToLibrary>
int FailedMidCall(CommState* st, MPI_Comm comm, const char* function, bool replayable, HandBackToLibrary hand_back,
                  const Delivery* delivery = nullptr) {
  const std::string why = std::string("the ohio group failed (") + ohio_last_error() + ")";
  return AfterFailure(st, comm, function, why, replayable, hand_back, delivery);
}

// FailedMidCall for a blocking call whose receive side is `delivery` (its blocks at
// delivery.at). `written`: the call was in place and ohio wrote into the program's buffer
// `recvbuf` itself; the call's kept send side (client/mpi/mpi_call_replay.h) is then put back there
// before the library runs the call, and without it the call cannot run in the library.
template <typename HandBackToLibrary>
int FailedInBlockingCall(CommState* st, MPI_Comm comm, const char* function, bool written, void* recvbuf,
                         const Delivery& delivery, HandBackToLibrary hand_back) {
  const RetainedSend* kept = Kept(st, st->calls);
  auto put_back_then_hand_back = [&](const std::string& why) {
    if (written) PutBack(*kept, recvbuf, delivery.at);
    return hand_back(why);
  };
  return FailedMidCall(st, comm, function, /*replayable=*/!written || kept != nullptr, put_back_then_hand_back,
                       &delivery);
}

// The run of opted-out calls of `function` if it is a blocking vector call (MPI_Alltoallv,
// MPI_Alltoallw), else null.
OptOutRun* OptOutRunOf(CommState* st, const char* function);

// This rank cannot serve the call (`why`): it opts out (ohio_alltoall_opt_out), the call ends on
// every rank of every node, and all of them hand it back together (`hand_back`, which calls
// the PMPI_ function); if the opt-out itself fails, the group failed with nothing moved.
template <typename HandBackToLibrary>
int OptOut(CommState* st, MPI_Comm comm, const char* function, const std::string& why, HandBackToLibrary hand_back) {
  if (ohio_alltoall_opt_out(st->group) == OHIO_ERR_OPTED_OUT) {
    if (OptOutRun* run = OptOutRunOf(st, function)) NoteOptedOut(*run);
    CountHandedBack(st, function, ohio::HandBackReason::kRankOptedOut);
    return hand_back(why);
  }
  return FailedMidCall(st, comm, function, /*replayable=*/true, hand_back);
}

// A failure every rank reached alike and that is the program's (counts that disagree, a range
// that is not mapped): the group stays usable.
int ProgramError(MPI_Comm comm, const char* function, int mpi_error);

// At MPI_Finalize, while the library still communicates: OHIO_STATS's report (served and fell
// through per function, summed over MPI_COMM_WORLD, with rank 0's reasons), then every group
// left and the connection to ohiod closed. Collective over MPI_COMM_WORLD.
void ReportAndLeave();

}  // namespace ohio::shim
