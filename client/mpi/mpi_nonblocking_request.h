// A nonblocking call ohiod moves while the program computes (MPI_Ialltoall, MPI_Ialltoallv, a
// Start of MPI_Alltoall_init), from the moment it is started to the moment ohio finishes it: what
// the rank still has to do then (unpack a receive side that is not contiguous, count it served)
// and how the call ended, as the blocking call would have told it. How the program holds it is
// the binding's: a generalized request of the shim's (client/mpi/shim/mpi_requests.h) or an Open MPI
// request of the collective component's (client/openmpi_coll/).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "client/mpi/mpi_shim_state.h"
#include "client/mpi/mpi_type_layout.h"
#include "client/libohio/ohio.h"

namespace ohio::shim {

struct OhioRequest {
  CommState* st = nullptr;
  MPI_Comm comm = MPI_COMM_NULL;
  const char* function = "";
  ohio_request call = 0;
  MPI_Request handle = MPI_REQUEST_NULL;
  bool complete = false;
  int error = MPI_SUCCESS;
  // The error is one the blocking call would have put through the communicator's error handler
  // (the group closed under it by another call's failure is only reported).
  bool errhandler_due = false;
  // A receive datatype that is not contiguous: ohio wrote into recv_packed, which is unpacked
  // into recvbuf when the request completes (the one copy left to the rank).
  const ohio::TypeLayout* recv_layout = nullptr;
  void* recvbuf = nullptr;
  MPI_Aint recv_elements = 0;
  std::vector<uint8_t> send_packed, recv_packed;
  // An alltoallv's receive side to unpack block by block instead (recv_counts not empty): the
  // program's counts and displacements, and where each block is in recv_packed.
  std::vector<int> recv_counts, recv_displs;
  std::vector<size_t> recv_at;
  // A receive datatype ohio has no layout for (client/mpi/mpi_library_pack.h): a duplicate of the
  // program's (which may free its own before the call completes), with which the library
  // unpacks recv_packed into recvbuf when the request completes, block j (recv_counts[j]
  // elements at recv_at[j]) to byte recv_typed_at[j] of recvbuf; freed then.
  MPI_Datatype recv_library_type = MPI_DATATYPE_NULL;
  std::vector<MPI_Aint> recv_typed_at;
  // A Start of a persistent request of ohio's (client/mpi/shim/mpi_alltoall_init.cc): the program's
  // persistent handle, which the Wait and Test functions put back in the program's slot when
  // they complete this request (the library frees a generalized request and leaves
  // MPI_REQUEST_NULL there; a persistent request must stay, inactive).
  MPI_Request persistent = MPI_REQUEST_NULL;
};

// Finishes `r` if ohio is done with it, waiting for that at most `within_us`: copies the receive
// side out, counts the call, and sets r->error (printed if it is one). True once complete.
bool Finish(OhioRequest* r, unsigned within_us);

}  // namespace ohio::shim
