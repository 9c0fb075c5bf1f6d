// An MPI_Alltoall-shaped call started to ohiod, for MPI_Ialltoall and for each MPI_Start of a
// persistent MPI_Alltoall_init: the same choices (the selection table's verdict for ialltoall,
// or OHIO_IALLTOALL_MIN_BYTES where it is set; layouts; packing) for both, so that both take the
// same path on every rank.
#include <memory>
#include <string>

#include "client/mpi/call_selection.h"
#include "client/mpi/mpi_nonblocking_request.h"
#include "client/mpi/mpi_shim_state.h"
#include "client/mpi/mpi_type_layout.h"
#include "client/libohio/ohio.h"
#include "client/mpi/served_calls.h"

namespace ohio::shim {

int StartNonblockingAlltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm, const char* function, const StateFor& state_for,
                 const Library& library, const Start& start) {
  const FallThroughTo fall_through(function, library);
  int decided = MPI_SUCCESS;
  CommState* st =
      BeginCall(comm, function, FirstCallBytes(recvcount, recvtype), state_for, fall_through, &decided);
  if (st == nullptr) return decided;
  const bool in_place = sendbuf == MPI_IN_PLACE;
  // Bytes per rank pair are the same on every rank (MPI's matching rule), so is this choice.
  const uint64_t call_bytes = PairBytes(in_place, sendcount, sendtype, recvcount, recvtype);
  if (st->ialltoall_min_set) {
    if (call_bytes < st->ialltoall_min_bytes) {
      return fall_through.HandBack(st, ohio::HandBackReason::kIalltoallMinBytes,
                                   "the call's " + std::to_string(call_bytes) +
                                       " bytes per rank are below OHIO_IALLTOALL_MIN_BYTES = " +
                                       std::to_string(st->ialltoall_min_bytes));
    }
  } else if (const CallVerdict verdict = SelectCall(*st, SelectedFunction::kIalltoall, call_bytes); !verdict.serve) {
    return fall_through.HandBack(st, ohio::HandBackReason::kSelectionTable, verdict.why);
  }
  const CallLayouts layouts = ServableLayouts(in_place, sendcount, sendtype, recvcount, recvtype);
  // The opt-out is a meeting of the ranks, the one wait inside this call.
  if (layouts.why != nullptr) return OptOut(st, comm, function, layouts.why, fall_through);

  auto r = std::make_unique<OhioRequest>();
  r->st = st;
  r->comm = comm;
  r->function = function;
  const size_t bytes = static_cast<size_t>(recvcount) * static_cast<size_t>(layouts.recv->size);
  int size = 0;
  if (!layouts.send->contiguous() || !layouts.recv->contiguous()) PMPI_Comm_size(comm, &size);
  // Non-contiguous data is packed now and unpacked when the request completes; contiguous data
  // is moved by ohiod where it lies.
  const void* send = in_place ? recvbuf : sendbuf;
  if (!layouts.send->contiguous()) {
    r->send_packed.resize(bytes * size);
    ohio::PackRuns(*layouts.send, send, static_cast<MPI_Aint>(in_place ? recvcount : sendcount) * size,
                   r->send_packed.data());
    send = r->send_packed.data();
  }
  void* recv = recvbuf;
  if (!layouts.recv->contiguous()) {
    if (!in_place) r->recv_packed.resize(bytes * size);
    recv = in_place ? r->send_packed.data() : r->recv_packed.data();
    r->recv_layout = layouts.recv;
    r->recvbuf = recvbuf;
    r->recv_elements = static_cast<MPI_Aint>(recvcount) * size;
    if (in_place) r->recv_packed.swap(r->send_packed);  // unpacked from recv_packed
  }
  const int rc = ohio_ialltoall(st->group, send, recv, bytes, &r->call);
  if (rc == OHIO_OK) return start(std::move(r));
  if (rc == OHIO_ERR_NOT_SUPPORTED) return fall_through.HandBack(st, ohio::HandBackReason::kNotSupported, ohio_last_error());
  if (rc == OHIO_ERR_INVALID_ARGUMENT) return ProgramError(comm, function, MPI_ERR_BUFFER);
  return FailedMidCall(st, comm, function, /*replayable=*/true, fall_through);
}

}  // namespace ohio::shim
