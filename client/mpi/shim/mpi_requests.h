// Nonblocking calls served by ohio, as the MPI program sees them: MPI generalized requests
// (MPI_Grequest_start), real MPI_Request handles that the MPI library's own Wait and Test
// functions accept in any array beside its own requests. ohiod moves the data while the program
// computes; the shim's Wait and Test functions (mpi_wait.cc, mpi_test_interposer.cc) look at ohio's
// completion of the requests that are ohio's, MPI_Grequest_complete those that are done, and
// then hand the whole array to the PMPI_ function, which returns them with the library's own.
//
// Nothing here blocks inside ohio alone: a wait sleeps on ohio's futex (woken the moment ohiod
// completes the call) in slices, and gives the MPI library its turn (PMPI_Iprobe) between them,
// since another rank may need this one's progress (a message it sent before its collective) to
// reach the collective at all. Every wait is bounded: a rank that never starts the call fails
// the group at ohiod's timeout, a daemon that dies is seen on the connection, a daemon that
// does nothing (stopped, hung) is given up on at the call's deadline, which the slices do not
// restart (ohio_test in client/libohio/ohio.h), and each completes the request with an error.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "client/mpi/mpi_nonblocking_request.h"
#include "client/mpi/mpi_shim_state.h"

namespace ohio::shim {

// A persistent MPI_Alltoall_init of the program's (client/mpi/shim/mpi_alltoall_init.cc), by the handle
// the program holds: the library's own persistent request for the same call, started by the
// library when a Start is handed back.
struct PersistentAlltoall {
  const void* sendbuf = nullptr;
  int sendcount = 0;
  MPI_Datatype sendtype = MPI_DATATYPE_NULL;
  void* recvbuf = nullptr;
  int recvcount = 0;
  MPI_Datatype recvtype = MPI_DATATYPE_NULL;
  MPI_Comm comm = MPI_COMM_NULL;
};
// The persistent requests of ohio's by handle, from any thread (the table takes its own lock,
// and none while it is empty).
void RememberPersistent(MPI_Request request, const PersistentAlltoall& call);
std::optional<PersistentAlltoall> FindPersistent(MPI_Request request);
void ForgetPersistent(MPI_Request request);

// Hands a started call to the MPI program as a generalized request. The requests of ohio's are
// found from any thread (a request itself is completed by the one thread that waits on it, as
// MPI requires).
int StartRequest(std::unique_ptr<OhioRequest> r, MPI_Request* request);
// The request of ohio's behind `request`, or null (also for MPI_REQUEST_NULL).
OhioRequest* Find(MPI_Request request);
// Whether any request of ohio's is outstanding: programs that start none pay one load per Wait.
bool AnyOutstanding();
// Completes `r` (copies out, MPI_Grequest_complete) if ohio is done with it, waiting for that
// at most `within_us`; true once complete.
bool TryComplete(OhioRequest* r, unsigned within_us);
// TryComplete for every request of ohio's in the array, waiting at most `within_us` for the
// first one not complete; the number of them still incomplete.
int TryCompleteAll(int count, const MPI_Request* requests, unsigned within_us);
// The slots of an array that hold a Start of a persistent request of ohio's, noted before a
// Wait or Test function runs, and given their persistent handle back after it if it completed
// them. Nothing to note when no request of ohio's is outstanding.
class PersistentSlots {
 public:
  PersistentSlots(int count, const MPI_Request* requests);
  void Restore(MPI_Request* requests) const;

 private:
  std::vector<std::pair<int, MPI_Request>> slots_;
};
// Between two waits: the MPI library's progress on its own requests.
void LetTheLibraryProgress();
// How long one wait sleeps on ohio before the library's turn: alone, and when the library's own
// requests in the same array may complete meanwhile.
constexpr unsigned kOhioOnlySliceUs = 1000;
constexpr unsigned kMixedSliceUs = 100;

}  // namespace ohio::shim
