#include "client/mpi/shim/mpi_shim_binding.h"

#include <atomic>
#include <cstdint>

#include "client/mpi/component_mark.h"

namespace ohio::shim {
namespace {

// The communicator of this thread's last served call and its state: programs call one
// communicator's collectives in a row, and finding the state in its attribute costs the
// library a hash lookup per call. Forgotten when any state is released (by whichever thread
// frees its communicator: `releases` counts them), so a communicator freed and another made at
// the same handle never finds a stale state, in this thread or another.
struct LastState {
  MPI_Comm comm = MPI_COMM_NULL;
  CommState* st = nullptr;
  uint64_t releases = 0;  // `releases` when it was kept
};
// Initial-exec: the shim is preloaded, never loaded later, so its thread-local variables are in
// the static TLS block and read without a call to __tls_get_addr on every MPI call.
__attribute__((tls_model("initial-exec"))) thread_local LastState last_state;
std::atomic<uint64_t> releases{0};

int DeleteState(MPI_Comm, int, void* attribute, void*) {
  releases.fetch_add(1, std::memory_order_acq_rel);
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
  static std::atomic<bool> initialised{false};
  if (!initialised.load(std::memory_order_relaxed)) {
    int ready = 0;
    PMPI_Initialized(&ready);
    if (!ready) return false;
    initialised.store(true, std::memory_order_relaxed);
  }
  if (comm == MPI_COMM_NULL) return false;
  // Whether Open MPI's component serves the process is settled inside MPI_Init (its init_query
  // marks it): read once after, not from the environment on every call.
  static const bool component_serves = ComponentServes();
  return !component_serves;
}

CommState* KnownState(MPI_Comm comm) {
  const uint64_t released = releases.load(std::memory_order_acquire);
  if (last_state.comm == comm && last_state.st != nullptr && last_state.releases == released) return last_state.st;
  void* attribute = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, Keyval(), &attribute, &found);
  if (!found) return nullptr;
  CommState* st = static_cast<CommState*>(attribute);
  last_state = LastState{comm, st, released};
  return st;
}

StateFor StateOf(MPI_Comm comm) {
  return [comm](uint64_t first_bytes) {
    if (CommState* st = KnownState(comm)) return st;
    const uint64_t released = releases.load(std::memory_order_acquire);
    CommState* st = SetUp(comm, first_bytes, [comm](CommState* s) { PMPI_Comm_set_attr(comm, Keyval(), s); });
    last_state = LastState{comm, st, released};
    return st;
  };
}

}  // namespace ohio::shim
