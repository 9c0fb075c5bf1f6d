// The MPI functions ohio serves, apart from how a program reaches them. Two bindings call these:
// the LD_PRELOAD shim (client/mpi/shim/mpi_alltoall.cc, ...), which finds a communicator's state in an
// attribute and hands the call back to the PMPI_ function, and the Open MPI collective component
// (client/openmpi_coll/), which keeps the state in its module and hands the call back to the collective
// module below it. Everything that decides and serves (the group per communicator, datatype
// layouts, statistics, the ranks' agreement after a failure: client/mpi/mpi_shim_state.h) is here,
// once, so the two bindings cannot drift apart.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "client/mpi/mpi_nonblocking_request.h"
#include "client/mpi/mpi_shim_state.h"

namespace ohio::shim {

// The communicator's state, set up (collectively, client/mpi/mpi_shim_state.h SetUp) on its first
// served call; `first_bytes` is that call's bytes per rank, which size the group's buffers.
using StateFor = std::function<CommState*(uint64_t first_bytes)>;
// The call as the program made it, run by the MPI library (the binding's hand-back). A
// reference to the binding's lambda, not a copy: a std::function would allocate for the lambda's
// captures (the call's arguments) on every call, a cost a call handed to the library pays on top
// of the library's own.
using Library = absl::FunctionRef<int()>;
// Hands a started nonblocking call to the program as a request the MPI library's Wait and Test
// functions complete.
using Start = std::function<int(std::unique_ptr<OhioRequest>)>;

// `count` elements of `type`: a first call's bytes per rank (0 if unknown).
uint64_t FirstCallBytes(int count, MPI_Datatype type);

// A served call's turn to the library: counted as handed back for its reason, then run there.
class HandBackTo {
 public:
  HandBackTo(const char* function, const Library& library) : function_(function), library_(library) {}
  int operator()(const std::string& why) const {
    HandedBack(function_, why);
    return library_();
  }
  // Every rank hands the call to the library for `reason` (`why` names it): counted in ohiod's
  // counters too, and in OHIO_STATS as the selection table's where it is.
  int HandBack(CommState* st, ohio::HandBackReason reason, const std::string& why) const {
    CountHandedBack(st, function_, reason);
    if (reason != ohio::HandBackReason::kSelectionTable) return (*this)(why);
    HandedBackByTable(function_, why);
    return library_();
  }

 private:
  const char* function_;
  const Library& library_;
};

// How every served call begins, alike on every rank: the process set up, the communicator's
// state (set up on its first call, sized by `first_bytes`), the call counted, and the library's
// turn where the group is gone or closed before the call (client/mpi/mpi_shim_state.h). The state,
// or null when that already decided the call: *rc is then its result.
CommState* BeginCall(MPI_Comm comm, const char* function, uint64_t first_bytes, const StateFor& state_for,
                     const HandBackTo& hand_back, int* rc);

// The last step of a blocking call served as ohio_alltoallv's bytes (MPI_Alltoallv, MPI_Alltoallw):
// `send` and `recv` laid out as st's tables say (send_bytes, send_at, recv_bytes, recv_at), the
// send side kept for a replay (client/mpi/mpi_call_replay.h), the call through ohio, and its
// outcome as the MPI function's result: served (then `unpack` moves a packed receive side into
// the program's buffer), the library's turn where every rank reached the same outcome, the
// program's error, or the ranks' agreement after a failure. `written`: the call is in place and
// ohio writes into the program's buffer `recvbuf` itself.
int ServeAlltoallvBytes(CommState* st, MPI_Comm comm, const char* function, int size, const void* send, void* recv,
                        bool written, void* recvbuf, const std::function<void()>& unpack,
                        const HandBackTo& hand_back);

int ServeAlltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm, const StateFor& state_for, const Library& library);
int ServeAlltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                   void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   const StateFor& state_for, const Library& library);
int ServeAlltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[],
                   void* recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[],
                   MPI_Comm comm, const StateFor& state_for, const Library& library);
// An MPI_Alltoall-shaped call started to ohiod, for MPI_Ialltoall and each MPI_Start of a
// persistent MPI_Alltoall_init (client/mpi/mpi_nonblocking_alltoall.cc); `function` names it in OHIO_STATS.
int StartNonblockingAlltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm, const char* function, const StateFor& state_for,
                 const Library& library, const Start& start);
int ServeIalltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                    void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                    const StateFor& state_for, const Library& library, const Start& start);

}  // namespace ohio::shim
