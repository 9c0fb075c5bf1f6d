// Which calls ohio serves and which the MPI library does, decided per call from the selection
// table (shm/tables/selection_table.h) that the communicator's group received at set-up, before
// anything of the call goes to ohio. Every rank holds the same table and shape, so a verdict
// from bytes every rank shares (MPI_Alltoall's, MPI_Ialltoall's) or from none (the vector
// functions where the table does not depend on them) is reached alike without a word; a vector
// call whose verdict depends on its bytes is decided by each rank from its own, and a rank whose
// verdict is the library opts out of the call (client/mpi/mpi_shim_state.h OptOut).
//
// A reason names the function, the shape and the row (not the bytes), so that OHIO_STATS groups
// the calls of one shape and row under one reason.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>
#include <string>

#include "client/mpi/mpi_shim_state.h"
#include "shm/tables/selection_table.h"

namespace ohio::shim {

// A call's verdict: served through ohio, or handed to the MPI library for `why`.
struct CallVerdict {
  bool serve = true;
  std::string why;
};

// The verdict for a call of `function` with `bytes_per_pair` on every rank pair (OHIO_SELECTION
// =always: served).
CallVerdict SelectCall(const CommState& st, SelectedFunction function, uint64_t bytes_per_pair);

// Whether the table hands a call of `selected` with `bytes_per_pair` on every rank pair (MPI_Alltoall's,
// MPI_Ialltoall's: the same on every rank) to the library; if it does, the call is counted so in
// OHIO_STATS under `function` and in ohiod's counters, and the caller runs it there. The verdict
// and the counters are kept per communicator for the last bytes of each function
// (CommState::KeptVerdict), so a program repeating one call pays a comparison.
bool HandedToLibraryByTable(CommState* st, const char* function, SelectedFunction selected, uint64_t bytes_per_pair);

// The verdict for `function` on the communicator when the bytes do not matter to it; none when
// they do.
std::optional<CallVerdict> SelectWhateverTheBytes(const CommState& st, SelectedFunction function);

// The verdict for this rank's own part of a vector call whose verdict depends on the bytes:
// `largest_pair_bytes` is the most this rank sends to or receives from one rank. A library
// verdict means this rank opts out (its reason says so).
CallVerdict SelectOwnPart(const CommState& st, SelectedFunction function, uint64_t largest_pair_bytes);

// A nonblocking vector call (MPI_Ialltoallv) is decided by SelectWhateverTheBytes alone: a
// rank cannot opt out of it without the others waiting for it inside the start, so where the
// verdict depends on the bytes the call goes to the library on every rank.
CallVerdict SelectNonblockingVector(const CommState& st, SelectedFunction function);

// MPI_Alltoall's (and MPI_Ialltoall's) bytes per rank pair: sendcount times the send type's size
// (in place: the receive side's), the same on every rank by MPI's matching rule.
uint64_t PairBytes(bool in_place, int sendcount, MPI_Datatype sendtype, int recvcount, MPI_Datatype recvtype);

}  // namespace ohio::shim
