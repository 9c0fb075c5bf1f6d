#include "client/mpi/shim/mpi_shim_binding.h"

#include "client/mpi/component_mark.h"

namespace ohio::shim {
namespace {

// The communicator of the last served call and its state: programs call one communicator's
// collectives in a row, and finding the state in its attribute costs the library a hash lookup
// per call. Forgotten when that state is released, so a communicator freed and another made at
// the same handle never finds a stale state.
struct LastState {
  MPI_Comm comm = MPI_COMM_NULL;
  CommState* st = nullptr;
};
thread_local LastState last_state;

int DeleteState(MPI_Comm, int, void* attribute, void*) {
  if (last_state.st == attribute) last_state = LastState{};
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
  // Once MPI is initialised it stays so for every call a program may make (none after
  // MPI_Finalize): asked of the library until then only.
  static bool initialised = false;
  if (!initialised) {
    int ready = 0;
    PMPI_Initialized(&ready);
    if (!ready) return false;
    initialised = true;
  }
  if (comm == MPI_COMM_NULL) return false;
  // Whether Open MPI's component serves the process is settled inside MPI_Init (its init_query
  // marks it): read once after, not from the environment on every call.
  static const bool component_serves = ComponentServes();
  return !component_serves;
}

StateFor StateOf(MPI_Comm comm) {
  return [comm](uint64_t first_bytes) {
    if (last_state.comm == comm && last_state.st != nullptr) return last_state.st;
    void* attribute = nullptr;
    int found = 0;
    PMPI_Comm_get_attr(comm, Keyval(), &attribute, &found);
    CommState* st = found ? static_cast<CommState*>(attribute)
                          : SetUp(comm, first_bytes, [comm](CommState* s) { PMPI_Comm_set_attr(comm, Keyval(), s); });
    last_state = LastState{comm, st};
    return st;
  };
}

}  // namespace ohio::shim
