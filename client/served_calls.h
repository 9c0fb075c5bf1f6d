// The MPI functions ohio serves, apart from how a program reaches them. Two bindings call these:
// the LD_PRELOAD shim (client/mpi_alltoall.cc, ...), which finds a communicator's state in an
// attribute and falls through to the PMPI_ function, and the Open MPI collective component
// (client/openmpi_coll/), which keeps the state in its module and falls back to the collective
// module below it. Everything that decides and serves (the group per communicator, datatype
// layouts, statistics, the ranks' agreement after a failure: client/mpi_shim_state.h) is here,
// once, so the two bindings cannot drift apart.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "client/mpi_posted_request.h"
#include "client/mpi_shim_state.h"

namespace ohio::shim {

// The communicator's state, set up (collectively, client/mpi_shim_state.h SetUp) on its first
// served call; `first_bytes` is that call's bytes per rank, which size the group's buffers.
using StateFor = std::function<CommState*(uint64_t first_bytes)>;
// The call as the program made it, run by the MPI library (the binding's fall-through).
using Library = std::function<int()>;
// Hands a posted nonblocking call to the program as a request the MPI library's Wait and Test
// functions complete.
using Start = std::function<int(std::unique_ptr<OhioRequest>)>;

// `count` elements of `type`: a first call's bytes per rank (0 if unknown).
uint64_t FirstCallBytes(int count, MPI_Datatype type);

int ServeAlltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm, const StateFor& state_for, const Library& library);
int ServeAlltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                   void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   const StateFor& state_for, const Library& library);
int ServeAlltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[],
                   void* recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[],
                   MPI_Comm comm, const StateFor& state_for, const Library& library);
// An MPI_Alltoall-shaped call posted to ohiod, for MPI_Ialltoall and each MPI_Start of a
// persistent MPI_Alltoall_init (client/mpi_post_alltoall.cc); `function` names it in OHIO_STATS.
int PostAlltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm, const char* function, const StateFor& state_for,
                 const Library& library, const Start& start);
int ServeIalltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                    void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                    const StateFor& state_for, const Library& library, const Start& start);

}  // namespace ohio::shim
