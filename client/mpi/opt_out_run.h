// A run of blocking vector calls (MPI_Alltoallv, MPI_Alltoallw) that a rank opted out of.
//
// Such a call's bytes differ between ranks, so whether the table serves it is each rank's own
// verdict, and a rank whose verdict is the library opts out through a round of ohio without data
// that every rank meets in (client/mpi/mpi_shim_state.h OptOut) before all call the library.
// That round costs about as much as a small call. A program that repeats one transpose (an FFT's
// MPI_Alltoallw of blocks above the table's range) would pay it on every call.
//
// The ranks all see the same outcome of each such call (it was served, or it went to the library
// because some rank opted out), so the same history is on every rank, and a decision from it
// alone is alike everywhere without meeting: after kOptedOutInARow calls in a row that went to
// the library because a rank opted out, the next kLibraryCalls go to the library without the
// round; then one call asks again, and if a rank opts out of it too, the next kLibraryCalls go
// without asking again. A call that is served (or ends any other way) ends the run. The price: a
// program whose calls would become servable meanwhile waits for the next call that asks.
#pragma once

#include <cstdint>

namespace ohio::shim {

constexpr uint32_t kOptedOutInARow = 16;
constexpr uint32_t kLibraryCalls = 1008;
// OHIO_STATS's reason for such a call.
constexpr const char* kLibraryByOptOutRun =
    "the last 16 calls of this communicator went to the MPI library because a rank opted out: the next 1008 go there "
    "without asking, then one asks again";

struct OptOutRun {
  uint32_t in_a_row = 0;      // calls in a row that a rank opted out of (kept while one is under way)
  uint32_t under_way = 0;     // in_a_row as the call under way began (its outcome decides the next)
  uint32_t library_left = 0;  // calls still to go to the library without asking
};

// At the start of a call that may ask: true if it goes to the library without asking (then it is
// counted as one). Otherwise the call asks, and is taken as not opted out of until NoteOptedOut.
bool GoesToLibraryByRun(OptOutRun& run);

// The call under way went to the library because a rank (this one or another) opted out.
void NoteOptedOut(OptOutRun& run);

}  // namespace ohio::shim
