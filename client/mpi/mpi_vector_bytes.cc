#include "client/mpi/mpi_vector_bytes.h"

#include <algorithm>

namespace ohio::shim {

CallLayouts ServableVectorLayouts(bool in_place, const int sendcounts[], MPI_Datatype sendtype, const int recvcounts[],
                                  MPI_Datatype recvtype, int size) {
  CallLayouts layouts = LayoutsOf(in_place, sendtype, recvtype);
  if (layouts.recv == nullptr || layouts.send == nullptr) return layouts;
  for (int j = 0; j < size; ++j) {
    if (recvcounts[j] < 0 || (!in_place && sendcounts[j] < 0)) {
      layouts.why = "a negative count";
      break;
    }
  }
  return layouts;
}

uint64_t LargestPairBytes(const ohio::TypeLayout& send, const int sendcounts[], const ohio::TypeLayout& recv,
                          const int recvcounts[], int size) {
  uint64_t largest = 0;
  for (int j = 0; j < size; ++j) {
    largest = std::max(largest, static_cast<uint64_t>(sendcounts[j]) * static_cast<uint64_t>(send.size));
    largest = std::max(largest, static_cast<uint64_t>(recvcounts[j]) * static_cast<uint64_t>(recv.size));
  }
  return largest;
}

void VectorBytes(const ohio::TypeLayout& layout, int size, const int counts[], const int displs[],
                 std::vector<size_t>* bytes, std::vector<size_t>* at, bool pack_side, const void* typed,
                 std::vector<uint8_t>* packed) {
  bytes->resize(size);
  at->resize(size);
  size_t next = 0;
  for (int j = 0; j < size; ++j) {
    (*bytes)[j] = static_cast<size_t>(counts[j]) * static_cast<size_t>(layout.size);
    if (packed == nullptr) {
      (*at)[j] = static_cast<size_t>(static_cast<MPI_Aint>(displs[j]) * layout.extent);
    } else {
      (*at)[j] = next;
      next += (*bytes)[j];
    }
  }
  if (packed == nullptr) return;
  packed->resize(next);
  if (!pack_side) return;
  for (int j = 0; j < size; ++j) {
    const auto* from = static_cast<const uint8_t*>(typed) + static_cast<MPI_Aint>(displs[j]) * layout.extent;
    ohio::PackRuns(layout, from, counts[j], packed->data() + (*at)[j]);
  }
}

void UnpackVector(const ohio::TypeLayout& layout, int size, const int counts[], const int displs[],
                  const std::vector<size_t>& at, const uint8_t* packed, void* typed) {
  for (int i = 0; i < size; ++i) {
    ohio::UnpackRuns(layout, packed + at[i], counts[i],
                     static_cast<uint8_t*>(typed) + static_cast<MPI_Aint>(displs[i]) * layout.extent);
  }
}

}  // namespace ohio::shim
