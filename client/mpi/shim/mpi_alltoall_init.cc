// MPI_Alltoall_init (MPI 4.0, persistent collectives), MPI_Start and MPI_Startall; built into
// the shim only for an MPI library that has them (MPICH 4; Open MPI 4.1 does not).
//
// The handle the program holds is the library's own persistent request for the same call
// (PMPI_Alltoall_init), which it starts itself when a Start is handed back. A Start that ohio
// serves is started exactly like MPI_Ialltoall (client/mpi/mpi_nonblocking_alltoall.cc: same opt-in
// threshold, decided alike on every rank from the bytes per rank, which are the same
// everywhere) and puts that call's generalized request in the program's slot; the Wait and Test
// functions put the persistent handle back when they complete it (PersistentSlots), so the
// program finds its request inactive and may start it again or free it.
//
// Not a blocking ohio_alltoall at Start: MPI_Start must not wait for the other ranks (a rank
// may start, then receive what another sends before it starts), and a blocking call there would
// turn such a legal program into a timeout.
#include <mpi.h>

#include <memory>
#include <string>

#include "client/mpi/shim/mpi_requests.h"
#include "client/mpi/shim/mpi_shim_binding.h"

using namespace ohio::shim;

extern "C" {

int MPI_Alltoall_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                      MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  const int rc = PMPI_Alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, request);
  if (rc != MPI_SUCCESS || comm == MPI_COMM_NULL) return rc;
  RememberPersistent(*request, PersistentAlltoall{sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm});
  return rc;
}

int MPI_Start(MPI_Request* request) {
  const std::optional<PersistentAlltoall> found = FindPersistent(*request);
  if (!found || !ShimServes(found->comm)) return PMPI_Start(request);
  const PersistentAlltoall& c = *found;
  const MPI_Request persistent = *request;
  MPI_Request started = MPI_REQUEST_NULL;
  const int rc = StartNonblockingAlltoall(c.sendbuf, c.sendcount, c.sendtype, c.recvbuf, c.recvcount, c.recvtype, c.comm,
                              "MPI_Alltoall_init", StateOf(c.comm), [&] { return PMPI_Start(request); },
                              [&](std::unique_ptr<OhioRequest> r) { return StartRequest(std::move(r), &started); });
  if (rc != MPI_SUCCESS || started == MPI_REQUEST_NULL) return rc;
  Find(started)->persistent = persistent;
  *request = started;
  return MPI_SUCCESS;
}

int MPI_Startall(int count, MPI_Request requests[]) {
  for (int i = 0; i < count; ++i) {
    if (const int rc = MPI_Start(&requests[i]); rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

}  // extern "C"
