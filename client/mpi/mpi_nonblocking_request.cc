#include "client/mpi/mpi_nonblocking_request.h"

#include <cstdio>
#include <string>

#include "client/mpi/mpi_library_pack.h"
#include "client/mpi/mpi_vector_bytes.h"

namespace ohio::shim {
namespace {

// How the call ended, as the blocking call would have told it.
int Settle(OhioRequest* r, int rc) {
  if (rc == OHIO_OK) {
    if (r->recv_library_type != MPI_DATATYPE_NULL) {
      UnpackLibraryBlocks(r->recv_library_type, r->recv_counts, r->recv_typed_at, r->recv_at,
                          r->recv_packed, r->recvbuf);
    } else if (r->recv_layout != nullptr && !r->recv_counts.empty()) {
      UnpackVector(*r->recv_layout, static_cast<int>(r->recv_counts.size()), r->recv_counts.data(),
                   r->recv_displs.data(), r->recv_at, r->recv_packed.data(), r->recvbuf);
    } else if (r->recv_layout != nullptr) {
      ohio::UnpackRuns(*r->recv_layout, r->recv_packed.data(), r->recv_elements, r->recvbuf);
    }
    Served(r->function);
    return MPI_SUCCESS;
  }
  r->errhandler_due = true;
  if (rc == OHIO_ERR_SIZE_MISMATCH) return Reported(r->function, ohio_last_error(), MPI_ERR_COUNT);
  if (rc == OHIO_ERR_INVALID_ARGUMENT) return Reported(r->function, ohio_last_error(), MPI_ERR_BUFFER);
  // The group stays open here, broken: the communicator's next call finds it so and the ranks
  // agree there (client/mpi/mpi_shim_state.h); closing it now would send this rank's next call to
  // the library alone.
  return Reported(r->function, std::string("the ohio group failed (") + ohio_last_error() + ")", MPI_ERR_OTHER);
}

}  // namespace

bool Finish(OhioRequest* r, unsigned within_us) {
  if (r->complete) return true;
  // Another thread's call on the communicator has the group: this request is tested next time.
  if (!GroupInUse::TryHold(r->st)) return false;
  struct Held {
    CommState* st;
    ~Held() { GroupInUse::Release(st); }
  } held{r->st};
  if (r->st->group == nullptr) {
    // A failure of another call closed the group under this one: its data never came.
    r->error = Reported(r->function, r->st->why, MPI_ERR_OTHER);
  } else {
    int done = 0;
    const int rc = ohio_test_within(r->st->group, r->call, within_us, &done);
    if (!done) return false;
    r->error = Settle(r, rc);
  }
  if (r->recv_library_type != MPI_DATATYPE_NULL) PMPI_Type_free(&r->recv_library_type);
  r->complete = true;
  r->st->nonblocking_outstanding.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

}  // namespace ohio::shim
