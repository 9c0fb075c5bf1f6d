// An MPI datatype as ohio moves it: the bytes of one element as runs (offset, length) in type-map
// order, plus the extent that separates consecutive elements. Built once per type from its
// envelope and contents (MPI_Type_get_envelope / get_contents, recursively) and cached on the
// type as an attribute, so it is freed with the type. Packing and unpacking go run by run.
//
// Served: predefined types whose data is contiguous, and dup, contiguous, vector, hvector,
// indexed, hindexed, indexed_block, hindexed_block, struct, subarray and resized over them.
// Anything else (darray, Fortran parameterised types, pair types with holes such as
// MPI_SHORT_INT) has no layout: a blocking call is handed back for it, a nonblocking one has the
// MPI library pack it (client/mpi/mpi_library_pack.h).
//
// Compiled once per MPI (it calls the MPI library through PMPI).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

namespace ohio {

struct TypeRun {
  MPI_Aint offset;  // from the start of the element (may be negative, as type maps may be)
  MPI_Aint length;
};

struct TypeLayout {
  std::vector<TypeRun> runs;  // one element, adjacent runs merged
  MPI_Aint extent = 0;        // from one element to the next
  MPI_Aint size = 0;          // data bytes of one element (the runs' lengths summed)

  // One run at offset 0 as long as the extent: the data is the buffer as it is.
  bool contiguous() const { return runs.size() == 1 && runs[0].offset == 0 && runs[0].length == extent; }
};

// More runs than this (an element with a million holes) is not worth serving: no layout.
constexpr size_t kMaxTypeRuns = size_t{1} << 20;

// The layout of `type`, or false (and `*why`) if it has none. Not cached.
bool FlattenType(MPI_Datatype type, TypeLayout* out, const char** why);

// The cached layout of `type` (flattened on first use), or nullptr if it has none (then `*why`).
const TypeLayout* LayoutOf(MPI_Datatype type, const char** why);

// `count` elements at `typed` -> consecutive bytes at `packed` (count * size of them).
void PackRuns(const TypeLayout& layout, const void* typed, MPI_Aint count, void* packed);
// The reverse.
void UnpackRuns(const TypeLayout& layout, const void* packed, MPI_Aint count, void* typed);

}  // namespace ohio
