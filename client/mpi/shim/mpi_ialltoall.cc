// MPI_Ialltoall of the LD_PRELOAD shim: the call is started (client/mpi/mpi_nonblocking_alltoall.cc,
// client/libohio/nonblocking_alltoalls.h) and returns a generalized request (client/mpi/shim/mpi_requests.h); ohiod
// moves the data from the send buffers to the receive buffers of every rank while the ranks
// compute, across nodes through the group's rounds (daemon/engine/nonblocking_across_nodes_alltoall.h).
// Consistency as for MPI_Alltoall (client/mpi/mpi_shim_state.h).
#include <mpi.h>

#include <memory>

#include "client/mpi/hand_back_at_once.h"
#include "client/mpi/shim/mpi_requests.h"
#include "client/mpi/shim/mpi_shim_binding.h"

using namespace ohio::shim;

extern "C" {

int MPI_Ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  auto library = [&] {
    return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
  };
  if (!ShimServes(comm) ||
      AlltoallGoesToLibraryAtOnce(KnownState(comm), kIndexIalltoall, ohio::SelectedFunction::kIalltoall,
                                  sendbuf == MPI_IN_PLACE, sendcount, sendtype, recvcount, recvtype)) {
    return library();
  }
  return StartNonblockingAlltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, "MPI_Ialltoall",
                      StateOf(comm), library,
                      [&](std::unique_ptr<OhioRequest> r) { return StartRequest(std::move(r), request); });
}

}  // extern "C"
