// An MPI_Alltoall-shaped call posted to ohiod, for MPI_Ialltoall and for each MPI_Start of a
// persistent MPI_Alltoall_init: the same choices (opt-in threshold, layouts, packing) for both,
// so that both take the same path on every rank.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>

namespace ohio::shim {

// Posts the call and makes *request a generalized request of ohio's (client/mpi_requests.h),
// or counts it as fallen through for `why` and returns library(), which hands it to the MPI
// library. `function` names the call in OHIO_STATS and errors.
int PostAlltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm, const char* function,
                 const std::function<int()>& library, MPI_Request* request);

}  // namespace ohio::shim
