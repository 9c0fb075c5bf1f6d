// MPI_Request_free and MPI_Cancel of a request of ohio's (client/mpi/shim/mpi_requests.h): "It is
// erroneous to call MPI_REQUEST_FREE or MPI_CANCEL for a request associated with a nonblocking
// collective operation" (MPI 3.1 and 4.0, section 5.12). The shim says so through the
// communicator's error handler (by default the job aborts) and leaves the request as it was,
// still to be completed by a Wait or Test; the library's own requests are its business.
#include <mpi.h>

#include <cstdio>

#include "client/mpi/shim/mpi_requests.h"

using namespace ohio::shim;

namespace {

int Refuse(OhioRequest* r, const char* function) {
  std::fprintf(stderr, "ohio: %s: the request is a nonblocking collective (%s), which cannot be freed or "
                       "cancelled; complete it with MPI_Wait or MPI_Test\n",
               function, r->function);
  MPI_Comm_call_errhandler(r->comm, MPI_ERR_REQUEST);
  return MPI_ERR_REQUEST;
}

}  // namespace

extern "C" {

int MPI_Request_free(MPI_Request* request) {
  OhioRequest* r = AnyOutstanding() ? Find(*request) : nullptr;
  if (r != nullptr) return Refuse(r, "MPI_Request_free");
  // An inactive persistent request of MPI_Alltoall_init's: the library's own, forgotten here too.
  const MPI_Request handle = *request;
  const int rc = PMPI_Request_free(request);
  if (rc == MPI_SUCCESS) ForgetPersistent(handle);
  return rc;
}

int MPI_Cancel(MPI_Request* request) {
  OhioRequest* r = AnyOutstanding() ? Find(*request) : nullptr;
  return r != nullptr ? Refuse(r, "MPI_Cancel") : PMPI_Cancel(request);
}

}  // extern "C"
