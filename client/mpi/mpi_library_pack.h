// A datatype ohio has no layout for (client/mpi/mpi_type_layout.h: a pair type, too many holes,
// darray, ...) in a nonblocking call: the MPI library packs and unpacks it instead
// (PMPI_Pack and PMPI_Unpack, native representation). A blocking call can opt out of ohio
// when one rank's datatype has no layout, as the ranks meet in it; a nonblocking call cannot
// (the others have started it through ohio and returned, and would reach the library only at
// their Wait, out of collective order), so it is served with bytes the library packed.
// ohio moves exactly count x type size bytes per block, the number every rank agrees on by
// MPI's matching rule: a type is packed by the library only where its packing is exactly that
// (so it is in Open MPI and MPICH). Packed on MPI_COMM_SELF (the communicator only names the
// representation, and the program's may be freed before its call completes).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ohio::shim {

// One side of an alltoall or alltoallv call in a datatype without a layout, as ohio's bytes:
// block j, counts[j] elements at byte typed_at[j] of the program's buffer, is *bytes[j] =
// counts[j] x the type's size bytes at offset *at[j] of *packed, block after block. The send
// side (`typed` not null) is packed from `typed` now; a receive side is laid out to be unpacked
// (UnpackLibraryBlocks) when the call completes. Null, or why the library's packing of a block
// is not those bytes (then nothing is to be sent).
const char* LibraryBlocks(MPI_Datatype type, const std::vector<int>& counts, const std::vector<MPI_Aint>& typed_at,
                          const void* typed, std::vector<size_t>* bytes, std::vector<size_t>* at,
                          std::vector<uint8_t>* packed);

// The receive side laid out by LibraryBlocks, unpacked from `packed` into `typed`.
void UnpackLibraryBlocks(MPI_Datatype type, const std::vector<int>& counts, const std::vector<MPI_Aint>& typed_at,
                         const std::vector<size_t>& at, const std::vector<uint8_t>& packed, void* typed);

// Where each block of an alltoallv side starts in the program's buffer, in bytes: displs[j]
// elements of `type` (an alltoall's side is block j at j x count elements).
std::vector<MPI_Aint> BlockPlaces(MPI_Datatype type, int size, const int displs[]);
std::vector<MPI_Aint> BlockPlaces(MPI_Datatype type, int size, int count);

}  // namespace ohio::shim
