// MPI_Alltoallv through ohiod (client/mpi/mpi_shim_state.h says how the ranks stay consistent).
// Counts and displacements become ohio's bytes; non-contiguous types are packed block by block.
#include "client/mpi/served_calls.h"

#include <mpi.h>

#include <optional>
#include <vector>

#include "client/mpi/call_selection.h"
#include "client/mpi/deferred_join.h"
#include "client/mpi/mpi_shim_state.h"
#include "client/mpi/mpi_type_layout.h"
#include "client/mpi/mpi_vector_bytes.h"

namespace ohio::shim {

int ServeAlltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                   void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   const StateFor& state_for, const Library& library) {
  // Counts differ between ranks: a communicator set up here is sized alike on every rank.
  const HandBackTo hand_back("MPI_Alltoallv", library);
  int decided = MPI_SUCCESS;
  CommState* st = BeginCall(comm, "MPI_Alltoallv", 0, state_for, hand_back, &decided);
  if (st == nullptr) return decided;

  const std::optional<CallVerdict> alike = SelectWhateverTheBytes(*st, SelectedFunction::kAlltoallv);
  if (alike && !alike->serve) return hand_back.HandBack(st, ohio::HandBackReason::kSelectionTable, alike->why);
  if (GoesToLibraryByRun(*OptOutRunOf(st, "MPI_Alltoallv"))) {
    return hand_back.HandBack(st, ohio::HandBackReason::kRankOptedOut, kLibraryByOptOutRun);
  }
  // Every rank is here in this call: the table serves it alike on all.
  if (!JoinedForThisCall(st, comm, 0)) return hand_back(st->why);
  const GroupInUse in_use(st);

  const bool in_place = sendbuf == MPI_IN_PLACE;
  int size = 0;
  PMPI_Comm_size(comm, &size);
  const CallLayouts layouts = ServableVectorLayouts(in_place, sendcounts, sendtype, recvcounts, recvtype, size);
  if (layouts.why != nullptr) return OptOut(st, comm, "MPI_Alltoallv", layouts.why, hand_back);
  if (!alike) {
    const uint64_t largest = LargestPairBytes(*layouts.send, in_place ? recvcounts : sendcounts, *layouts.recv,
                                              recvcounts, size);
    const CallVerdict own = SelectOwnPart(*st, SelectedFunction::kAlltoallv, largest);
    if (!own.serve) return OptOut(st, comm, "MPI_Alltoallv", own.why, hand_back);
  }
  // In place, the others read this rank's data while it receives into the same buffer: send
  // from a packed copy instead.
  const bool pack_send = in_place || !layouts.send->contiguous();
  const bool pack_recv = !layouts.recv->contiguous();
  VectorBytes(*layouts.send, size, in_place ? recvcounts : sendcounts, in_place ? rdispls : sdispls, &st->send_bytes,
              &st->send_at, true, in_place ? recvbuf : sendbuf, pack_send ? &st->send_packed : nullptr);
  VectorBytes(*layouts.recv, size, recvcounts, rdispls, &st->recv_bytes, &st->recv_at, false, nullptr,
              pack_recv ? &st->recv_packed : nullptr);
  const void* send = pack_send ? st->send_packed.data() : sendbuf;
  void* recv = pack_recv ? st->recv_packed.data() : recvbuf;
  auto unpack = [&] {
    if (pack_recv) UnpackVector(*layouts.recv, size, recvcounts, rdispls, st->recv_at, st->recv_packed.data(), recvbuf);
  };
  return ServeAlltoallvBytes(st, comm, "MPI_Alltoallv", size, send, recv, in_place && recv == recvbuf, recvbuf, unpack,
                             hand_back);
}

}  // namespace ohio::shim
