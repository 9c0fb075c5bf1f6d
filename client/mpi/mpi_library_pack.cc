#include "client/mpi/mpi_library_pack.h"

#include <algorithm>
#include <climits>

namespace ohio::shim {
namespace {

MPI_Aint ExtentOf(MPI_Datatype type) {
  MPI_Aint lower = 0, extent = 0;
  PMPI_Type_get_extent(type, &lower, &extent);
  return extent;
}

}  // namespace

const char* LibraryBlocks(MPI_Datatype type, const std::vector<int>& counts, const std::vector<MPI_Aint>& typed_at,
                          const void* typed, std::vector<size_t>* bytes, std::vector<size_t>* at,
                          std::vector<uint8_t>* packed) {
  int type_size = 0;
  PMPI_Type_size(type, &type_size);
  const size_t blocks = counts.size();
  bytes->resize(blocks);
  at->resize(blocks);
  size_t next = 0;
  for (size_t j = 0; j < blocks; ++j) {
    const long long block = static_cast<long long>(counts[j]) * type_size;
    if (block > INT_MAX) return "a datatype without a layout, a block of more than INT_MAX bytes (beyond MPI_Pack)";
    // MPI_Pack_size is an upper bound: the packing is exact only where it is count x size.
    int pack_size = 0;
    if (PMPI_Pack_size(counts[j], type, MPI_COMM_SELF, &pack_size) != MPI_SUCCESS || pack_size != block) {
      return "a datatype without a layout that the MPI library packs into other than count x size bytes";
    }
    (*bytes)[j] = static_cast<size_t>(block);
    (*at)[j] = next;
    next += (*bytes)[j];
  }
  packed->resize(next);
  if (typed == nullptr) return nullptr;
  for (size_t j = 0; j < blocks; ++j) {
    int position = 0;
    if (PMPI_Pack(static_cast<const uint8_t*>(typed) + typed_at[j], counts[j], type, packed->data() + (*at)[j],
                  static_cast<int>((*bytes)[j]), &position, MPI_COMM_SELF) != MPI_SUCCESS ||
        static_cast<size_t>(position) != (*bytes)[j]) {
      return "a datatype without a layout that the MPI library packed into other than count x size bytes";
    }
  }
  return nullptr;
}

void UnpackLibraryBlocks(MPI_Datatype type, const std::vector<int>& counts, const std::vector<MPI_Aint>& typed_at,
                         const std::vector<size_t>& at, const std::vector<uint8_t>& packed, void* typed) {
  for (size_t j = 0; j < counts.size(); ++j) {
    int position = 0;
    PMPI_Unpack(packed.data() + at[j], static_cast<int>(std::min<size_t>(packed.size() - at[j], INT_MAX)), &position,
                static_cast<uint8_t*>(typed) + typed_at[j], counts[j], type, MPI_COMM_SELF);
  }
}

std::vector<MPI_Aint> BlockPlaces(MPI_Datatype type, int size, const int displs[]) {
  const MPI_Aint extent = ExtentOf(type);
  std::vector<MPI_Aint> places(size);
  for (int j = 0; j < size; ++j) places[j] = static_cast<MPI_Aint>(displs[j]) * extent;
  return places;
}

std::vector<MPI_Aint> BlockPlaces(MPI_Datatype type, int size, int count) {
  const MPI_Aint extent = ExtentOf(type);
  std::vector<MPI_Aint> places(size);
  for (int j = 0; j < size; ++j) places[j] = static_cast<MPI_Aint>(j) * count * extent;
  return places;
}

}  // namespace ohio::shim
