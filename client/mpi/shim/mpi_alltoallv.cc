// MPI_Alltoallv of the LD_PRELOAD shim: served by the shared core (client/mpi/serve_alltoallv.cc),
// handing the call back to PMPI_Alltoallv.
#include <mpi.h>

#include "client/mpi/hand_back_at_once.h"
#include "client/mpi/shim/mpi_shim_binding.h"

using namespace ohio::shim;

extern "C" {

int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  auto library = [&] {
    return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
  };
  if (!ShimServes(comm)) return library();
  if (CommState* st = KnownState(comm); st != nullptr && NoGroupHandsBackAtOnce(st, kIndexAlltoallv)) return library();
  return ServeAlltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
                        StateOf(comm), library);
}

}  // extern "C"
