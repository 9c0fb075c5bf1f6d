// MPI_Ialltoall through ohiod: the call is posted (client/mpi_post_alltoall.h,
// client/posted_alltoalls.h) and returns a generalized request (client/mpi_requests.h); ohiod
// moves the data from the send buffers to the receive buffers of every rank while the ranks
// compute, across nodes through the group's rounds (daemon/offloaded_remote_alltoall.h).
// Consistency as for MPI_Alltoall (client/mpi_shim_state.h).
#include <mpi.h>

#include <string>

#include "client/mpi_post_alltoall.h"

using namespace ohio::shim;

extern "C" {

int MPI_Ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  int ready = 0;
  PMPI_Initialized(&ready);
  if (!ready || comm == MPI_COMM_NULL) {
    return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
  }
  return PostAlltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, "MPI_Ialltoall",
                      [&] {
                        return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                              request);
                      },
                      request);
}

}  // extern "C"
