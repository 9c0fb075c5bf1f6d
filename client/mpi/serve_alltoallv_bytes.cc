// The last step of a blocking call that travels as ohio_alltoallv's bytes (MPI_Alltoallv, and
// MPI_Alltoallw, whose blocks each have their own type): once the call's sides are laid out, the
// serving and every outcome are the same for both, so they are here once.
#include "client/mpi/served_calls.h"

#include <mpi.h>

#include "client/libohio/ohio.h"
#include "client/mpi/mpi_call_replay.h"
#include "client/mpi/mpi_shim_state.h"

namespace ohio::shim {

int ServeAlltoallvBytes(CommState* st, MPI_Comm comm, const char* function, int size, const void* send, void* recv,
                        bool written, void* recvbuf, const std::function<void()>& unpack,
                        const HandBackTo& hand_back) {
  Retain(st, comm, size, send, st->send_bytes.data(), st->send_at.data());
  const int rc = ohio_alltoallv(st->group, send, st->send_bytes.data(), st->send_at.data(), recv,
                                st->recv_bytes.data(), st->recv_at.data());
  if (rc == OHIO_OK) {
    unpack();
    Served(function);
    return MPI_SUCCESS;
  }
  if (rc == OHIO_ERR_OPTED_OUT) {
    if (OptOutRun* run = OptOutRunOf(st, function)) NoteOptedOut(*run);
    return hand_back.HandBack(st, ohio::HandBackReason::kRankOptedOut, "another rank could not use ohio for this call");
  }
  // Every rank reached it alike: on one node ranks may not read each other's memory, across
  // nodes the call would take more rounds of the group's buffers than are served.
  if (rc == OHIO_ERR_NOT_SUPPORTED) return hand_back.HandBack(st, ohio::HandBackReason::kNotSupported, ohio_last_error());
  if (rc == OHIO_ERR_SIZE_MISMATCH) return ProgramError(comm, function, MPI_ERR_COUNT);
  if (rc == OHIO_ERR_INVALID_ARGUMENT) return ProgramError(comm, function, MPI_ERR_ARG);
  return FailedInBlockingCall(st, comm, function, written, recvbuf,
                              Delivery{recv, st->recv_bytes.data(), st->recv_at.data(), unpack}, hand_back);
}

}  // namespace ohio::shim
