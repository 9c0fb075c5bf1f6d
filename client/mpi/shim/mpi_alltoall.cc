// MPI_Alltoall of the LD_PRELOAD shim: served by the shared core (client/mpi/serve_alltoall.cc),
// handing the call back to PMPI_Alltoall.
#include <mpi.h>

#include "client/mpi/hand_back_at_once.h"
#include "client/mpi/shim/mpi_shim_binding.h"

using namespace ohio::shim;

extern "C" {

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm) {
  auto library = [&] { return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); };
  if (!ShimServes(comm) ||
      AlltoallGoesToLibraryAtOnce(KnownState(comm), kIndexAlltoall, ohio::SelectedFunction::kAlltoall,
                                  sendbuf == MPI_IN_PLACE, sendcount, sendtype, recvcount, recvtype)) {
    return library();
  }
  return ServeAlltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, StateOf(comm), library);
}

}  // extern "C"
