// MPI_Ialltoallv of the LD_PRELOAD shim: started by the shared core (client/mpi/serve_ialltoallv.cc)
// as a generalized request (client/mpi/shim/mpi_requests.h), handing the call back to PMPI_Ialltoallv.
#include <mpi.h>

#include <memory>

#include "client/mpi/hand_back_at_once.h"
#include "client/mpi/shim/mpi_requests.h"
#include "client/mpi/shim/mpi_shim_binding.h"

using namespace ohio::shim;

extern "C" {

int MPI_Ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                   void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request* request) {
  auto library = [&] {
    return PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
                           request);
  };
  if (!ShimServes(comm)) return library();
  if (CommState* st = KnownState(comm); st != nullptr && NoGroupHandsBackAtOnce(st, kIndexIalltoallv)) return library();
  return ServeIalltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
                         StateOf(comm), library,
                         [&](std::unique_ptr<OhioRequest> r) { return StartRequest(std::move(r), request); });
}

}  // extern "C"
