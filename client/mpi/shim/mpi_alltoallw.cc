// MPI_Alltoallw of the LD_PRELOAD shim: served by the shared core (client/mpi/serve_alltoallw.cc),
// handing the call back to PMPI_Alltoallw.
#include <mpi.h>

#include "client/mpi/hand_back_at_once.h"
#include "client/mpi/shim/mpi_shim_binding.h"

using namespace ohio::shim;

extern "C" {

int MPI_Alltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[],
                  void* recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[],
                  MPI_Comm comm) {
  auto library = [&] {
    return PMPI_Alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm);
  };
  if (!ShimServes(comm)) return library();
  if (CommState* st = KnownState(comm); st != nullptr && NoGroupHandsBackAtOnce(st, kIndexAlltoallw)) return library();
  return ServeAlltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm,
                        StateOf(comm), library);
}

}  // extern "C"
