// MPI_Alltoall through ohiod (client/mpi/mpi_shim_state.h says how the ranks stay consistent).
// Contiguous datatypes are used where they lie; others are packed run by run.
#include "client/mpi/served_calls.h"

#include <mpi.h>

#include "client/mpi/call_selection.h"
#include "client/mpi/deferred_join.h"
#include "client/mpi/mpi_shim_state.h"
#include "client/mpi/mpi_type_layout.h"
#include "client/libohio/ohio.h"

namespace ohio::shim {

int ServeAlltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm, const StateFor& state_for, const Library& library) {
  const HandBackTo hand_back("MPI_Alltoall", library);
  int decided = MPI_SUCCESS;
  CommState* st =
      BeginCall(comm, "MPI_Alltoall", FirstCallBytes(recvcount, recvtype), state_for, hand_back, &decided);
  if (st == nullptr) return decided;

  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (HandedToLibraryByTable(st, "MPI_Alltoall", SelectedFunction::kAlltoall,
                             PairBytes(in_place, sendcount, sendtype, recvcount, recvtype))) {
    return library();
  }
  // Every rank is here in this call: the table serves it alike on all.
  if (!JoinedForThisCall(st, comm, FirstCallBytes(recvcount, recvtype))) return hand_back(st->why);
  const GroupInUse in_use(st);
  const CallLayouts layouts = ServableLayouts(in_place, sendcount, sendtype, recvcount, recvtype);
  if (layouts.why != nullptr) return OptOut(st, comm, "MPI_Alltoall", layouts.why, hand_back);

  const size_t bytes = static_cast<size_t>(recvcount) * static_cast<size_t>(layouts.recv->size);
  // Non-contiguous data goes through a packed copy, run by run; contiguous data as it is.
  int size = 0;
  PMPI_Comm_size(comm, &size);
  const void* send = in_place ? recvbuf : sendbuf;
  const MPI_Aint send_elements = static_cast<MPI_Aint>(in_place ? recvcount : sendcount) * size;
  if (!layouts.send->contiguous()) {
    st->send_packed.resize(bytes * size);
    ohio::PackRuns(*layouts.send, send, send_elements, st->send_packed.data());
    send = st->send_packed.data();
  }
  void* recv = recvbuf;
  if (!layouts.recv->contiguous()) {
    // In place stays in place: the packed copy is both.
    if (!in_place) st->recv_packed.resize(bytes * size);
    recv = in_place ? st->send_packed.data() : st->recv_packed.data();
  }
  RetainUniform(st, comm, size, send, bytes);
  const int rc = ohio_alltoall(st->group, send, recv, bytes);
  auto unpack = [&] {
    if (recv != recvbuf) ohio::UnpackRuns(*layouts.recv, recv, static_cast<MPI_Aint>(recvcount) * size, recvbuf);
  };
  if (rc == OHIO_OK) {
    unpack();
    Served("MPI_Alltoall");
    return MPI_SUCCESS;
  }
  if (rc == OHIO_ERR_OPTED_OUT) {
    return hand_back.HandBack(st, ohio::HandBackReason::kRankOptedOut, "another rank could not use ohio for this call");
  }
  if (rc == OHIO_ERR_SIZE_MISMATCH) return ProgramError(comm, "MPI_Alltoall", MPI_ERR_COUNT);
  // The group failed in the call: its blocks, rank after rank, are where a resend lands.
  st->recv_bytes.assign(size, bytes);
  st->recv_at.resize(size);
  for (int j = 0; j < size; ++j) st->recv_at[j] = static_cast<size_t>(j) * bytes;
  return FailedInBlockingCall(st, comm, "MPI_Alltoall", in_place && recv == recvbuf, recvbuf,
                              Delivery{recv, st->recv_bytes.data(), st->recv_at.data(), unpack}, hand_back);
}

}  // namespace ohio::shim
