// An MPI alltoallv side (element counts and displacements of one datatype) as ohio's bytes and
// byte offsets, for MPI_Alltoallv and MPI_Ialltoallv alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "client/mpi/mpi_shim_state.h"
#include "client/mpi/mpi_type_layout.h"

namespace ohio::shim {

// The decision (client/mpi/mpi_shim_state.h CallLayouts) for a blocking alltoallv call of `size`
// blocks a side: its layouts, or why this rank cannot pass it to ohio (a type without a layout,
// a negative count).
CallLayouts ServableVectorLayouts(bool in_place, const int sendcounts[], MPI_Datatype sendtype, const int recvcounts[],
                                  MPI_Datatype recvtype, int size);

// The most bytes this rank sends to or receives from one rank in an alltoallv call (what the
// selection table weighs when the ranks' bytes differ: client/mpi/call_selection.h).
uint64_t LargestPairBytes(const ohio::TypeLayout& send, const int sendcounts[], const ohio::TypeLayout& recv,
                          const int recvcounts[], int size);

// A contiguous type is used where it lies (`packed` null: *at are the displacements in bytes);
// another is packed run by run, block after block, into *packed (pack_side: from `typed` now;
// otherwise laid out there to be unpacked after the call), *at being offsets into it.
void VectorBytes(const ohio::TypeLayout& layout, int size, const int counts[], const int displs[],
                 std::vector<size_t>* bytes, std::vector<size_t>* at, bool pack_side, const void* typed,
                 std::vector<uint8_t>* packed);

// The blocks of a receive side laid out in `packed` by VectorBytes, unpacked into `typed`.
void UnpackVector(const ohio::TypeLayout& layout, int size, const int counts[], const int displs[],
                  const std::vector<size_t>& at, const uint8_t* packed, void* typed);

}  // namespace ohio::shim
