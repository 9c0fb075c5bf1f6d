#include "client/mpi/shim/mpi_shim_binding.h"

#include "client/mpi/component_mark.h"

namespace ohio::shim {
namespace {

int DeleteState(MPI_Comm, int, void* attribute, void*) {
  Release(static_cast<CommState*>(attribute));
  return MPI_SUCCESS;
}

int Keyval() {
  // Dups and splits get a group of their own on first use, not a copy of the parent's.
  static int keyval = [] {
    int k = MPI_KEYVAL_INVALID;
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, DeleteState, &k, nullptr);
    return k;
  }();
  return keyval;
}

}  // namespace

bool ShimServes(MPI_Comm comm) {
  int ready = 0;
  PMPI_Initialized(&ready);
  return ready && comm != MPI_COMM_NULL && !ComponentServes();
}

StateFor StateOf(MPI_Comm comm) {
  return [comm](uint64_t first_bytes) {
    void* attribute = nullptr;
    int found = 0;
    PMPI_Comm_get_attr(comm, Keyval(), &attribute, &found);
    if (found) return static_cast<CommState*>(attribute);
    return SetUp(comm, first_bytes, [comm](CommState* st) { PMPI_Comm_set_attr(comm, Keyval(), st); });
  };
}

}  // namespace ohio::shim
