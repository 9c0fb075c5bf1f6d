// The one call whose outcome a failure can split across ranks, run again in the MPI library.
//
// A peer daemon that dies after the ranks of some nodes completed call c through ohio, but
// before the ranks of another node did, leaves the first in call c+1 and the others failing in
// c (client/mpi/mpi_shim_state.h: the ranks' agreement). The ones in c+1 have returned success from
// c: they cannot take it back, and the buffers the program gave c are the program's again. So
// the shim keeps each served call's send side (its bytes, block by block), and the ranks that
// completed c send the ranks that did not their blocks of c again, from that copy, in the MPI
// library on the agreement communicator: every rank then has c's correct result.
//
// The copy costs one memcpy of the send side per call, so it is kept only where it can matter:
// for a group across nodes (a group on one node goes on without its daemon), and while the
// communicator's error handler returns errors to the program (under MPI_ERRORS_ARE_FATAL the
// first failure ends the job). Two calls are kept, the current one and the one before. The same
// copy lets a rank in call c+1 whose in-place buffer ohio may have written into put its data
// back and run c+1 in the library.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace ohio::shim {

struct CommState;

// A served call's send side: block j (count[j] bytes, for rank j) at bytes + at[j].
struct RetainedSend {
  uint64_t call = 0;  // CommState::calls of the call kept (0: none)
  std::vector<uint8_t> bytes;
  std::vector<size_t> count, at;
};

// Whether `comm`'s error handler hands errors back to the program (anything but
// MPI_ERRORS_ARE_FATAL and MPI_ERRORS_ABORT).
bool ErrorsReturn(MPI_Comm comm);

// Keeps the current call's send side (block j: count[j] bytes at send + at[j]) where the
// replay can need it (above); otherwise forgets any kept call.
void Retain(CommState* st, MPI_Comm comm, int size, const void* send, const size_t* count, const size_t* at);
// The same for an MPI_Alltoall side: `bytes` to every rank, block after block.
void RetainUniform(CommState* st, MPI_Comm comm, int size, const void* send, size_t bytes);

// Call `call`'s kept send side, or null.
const RetainedSend* Kept(const CommState* st, uint64_t call);

// Writes a kept send side back where an in-place call's blocks lie: block j at base + at[j].
void PutBack(const RetainedSend& kept, void* base, const size_t* at);

// Where a rank that did not complete a call receives it when it is run again: block j
// (count[j] bytes, from rank j) at recv + at[j]; then `finish` (unpacking a packed receive
// into the program's buffer, or nothing).
struct Delivery {
  void* recv = nullptr;
  const size_t* count = nullptr;
  const size_t* at = nullptr;
  std::function<void()> finish;
};

// Collective on st->agreement, for every rank after the agreement found that ranks completed
// call `call` and others (`lagging`: this one) did not. Runs it again in the library if every
// rank can (a lagging rank needs `delivery`, every rank call `call` kept): true if it ran, and
// then this rank, if lagging, holds the call's correct result.
bool ReplayForLaggingRanks(CommState* st, uint64_t call, bool lagging, const Delivery* delivery);

}  // namespace ohio::shim
