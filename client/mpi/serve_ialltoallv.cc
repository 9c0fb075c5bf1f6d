// MPI_Ialltoallv through ohiod: started like MPI_Ialltoall (client/mpi/mpi_nonblocking_alltoall.cc) with the
// counts and displacements as ohio's bytes (client/mpi/mpi_vector_bytes.h); ohiod checks that every
// pair agrees before it moves anything. Non-contiguous types are packed now and unpacked block
// by block when the request completes; a type without a layout, by the MPI library
// (client/mpi/mpi_library_pack.h).
//
// Whether ohiod moves it is decided alike on every rank without a word: the bytes of a v call
// differ from rank to rank, and a rank cannot opt out of a nonblocking call alone. So the
// selection table decides it only where its verdict is the same whatever the bytes
// (client/mpi/call_selection.h SelectNonblockingVector), and the library takes it where the
// bytes would decide. OHIO_IALLTOALL_MIN_BYTES set (to any value, agreed at set-up) means the
// deployer gave ohiod a core of its own: every MPI_Ialltoallv is served, as the table is not asked.
#include "client/mpi/served_calls.h"

#include <mpi.h>

#include <memory>
#include <vector>

#include "client/mpi/call_selection.h"
#include "client/mpi/deferred_join.h"
#include "client/mpi/mpi_library_pack.h"
#include "client/mpi/mpi_nonblocking_request.h"
#include "client/mpi/mpi_shim_state.h"
#include "client/mpi/mpi_type_layout.h"
#include "client/mpi/mpi_vector_bytes.h"
#include "client/libohio/ohio.h"

namespace ohio::shim {

int ServeIalltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                    void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                    const StateFor& state_for, const Library& library, const Start& start) {
  // Counts differ between ranks: a communicator set up here is sized alike on every rank.
  const HandBackTo hand_back("MPI_Ialltoallv", library);
  int decided = MPI_SUCCESS;
  CommState* st = BeginCall(comm, "MPI_Ialltoallv", 0, state_for, hand_back, &decided);
  if (st == nullptr) return decided;
  if (!st->ialltoall_min_set) {
    const CallVerdict verdict = SelectNonblockingVector(*st, SelectedFunction::kIalltoallv);
    if (!verdict.serve) return hand_back.HandBack(st, ohio::HandBackReason::kSelectionTable, verdict.why);
  }
  // Every rank is here in this call: the table serves it alike on all.
  if (!JoinedForThisCall(st, comm, 0)) return hand_back(st->why);
  const GroupInUse in_use(st);

  const bool in_place = sendbuf == MPI_IN_PLACE;
  int size = 0;
  PMPI_Comm_size(comm, &size);
  // A datatype without a layout is packed by the library (client/mpi/mpi_library_pack.h): a
  // rank cannot opt out of a nonblocking call alone.
  const CallLayouts layouts = LayoutsOf(in_place, sendtype, recvtype);
  // A negative count is the program's error: where this rank alone made it, its library call
  // finds no partners, while the ranks that started the call through ohio fail at their Wait
  // when the group's timeout closes the group (MPI_ERR_OTHER).
  for (int j = 0; j < size; ++j) {
    if (recvcounts[j] < 0 || (!in_place && sendcounts[j] < 0)) {
      return OptOut(st, comm, "MPI_Ialltoallv", "a negative count", hand_back);
    }
  }

  auto r = std::make_unique<OhioRequest>();
  r->st = st;
  r->comm = comm;
  r->function = "MPI_Ialltoallv";
  // In place on one node, ohiod reads every rank's data before it writes any: the receive side
  // is also the send side, where it lies when contiguous. Across nodes a call may go in several
  // rounds, each writing pieces of the receive side before the next reads the send side: the
  // send side is packed now, as a blocking MPI_Alltoallv does.
  const MPI_Datatype send_type = in_place ? recvtype : sendtype;
  const int* send_counts = in_place ? recvcounts : sendcounts;
  const int* send_displs = in_place ? rdispls : sdispls;
  const void* send = in_place ? recvbuf : sendbuf;
  std::vector<size_t> send_bytes, send_at, recv_bytes;
  // The library would not pack this rank's datatype as the bytes every rank agrees on (never so
  // in Open MPI or MPICH): the call fails here with the reason; the others' at their Wait.
  if (layouts.recv == nullptr) {
    r->recv_counts.assign(recvcounts, recvcounts + size);
    r->recv_typed_at = BlockPlaces(recvtype, size, rdispls);
    const char* why = LibraryBlocks(recvtype, r->recv_counts, r->recv_typed_at, nullptr, &recv_bytes,
                                    &r->recv_at, &r->recv_packed);
    if (why != nullptr) return FailCall(comm, "MPI_Ialltoallv", why);
  }
  if (layouts.send == nullptr) {
    const char* why = LibraryBlocks(send_type, std::vector<int>(send_counts, send_counts + size),
                                    BlockPlaces(send_type, size, send_displs), send, &send_bytes, &send_at,
                                    &r->send_packed);
    if (why != nullptr) return FailCall(comm, "MPI_Ialltoallv", why);
    send = r->send_packed.data();
  } else {
    const bool pack_send = !layouts.send->contiguous() || (in_place && st->nodes > 1);
    VectorBytes(*layouts.send, size, send_counts, send_displs, &send_bytes, &send_at, true, send,
                pack_send ? &r->send_packed : nullptr);
    if (pack_send) send = r->send_packed.data();
  }
  void* recv = recvbuf;
  if (layouts.recv == nullptr) {
    recv = r->recv_packed.data();
    r->recvbuf = recvbuf;
  } else {
    const bool pack_recv = !layouts.recv->contiguous();
    VectorBytes(*layouts.recv, size, recvcounts, rdispls, &recv_bytes, &r->recv_at, false, nullptr,
                pack_recv ? &r->recv_packed : nullptr);
    if (pack_recv) {
      recv = r->recv_packed.data();
      r->recv_layout = layouts.recv;
      r->recvbuf = recvbuf;
      r->recv_counts.assign(recvcounts, recvcounts + size);
      r->recv_displs.assign(rdispls, rdispls + size);
    }
  }
  const int rc = ohio_ialltoallv(st->group, send, send_bytes.data(), send_at.data(), recv, recv_bytes.data(),
                                 r->recv_at.data(), &r->call);
  if (rc == OHIO_OK) {
    if (layouts.recv == nullptr) PMPI_Type_dup(recvtype, &r->recv_library_type);
    st->nonblocking_outstanding.fetch_add(1, std::memory_order_relaxed);
    return start(std::move(r));
  }
  if (rc == OHIO_ERR_NOT_SUPPORTED) return hand_back.HandBack(st, ohio::HandBackReason::kNotSupported, ohio_last_error());
  if (rc == OHIO_ERR_INVALID_ARGUMENT) return ProgramError(comm, "MPI_Ialltoallv", MPI_ERR_BUFFER);
  return FailedMidCall(st, comm, "MPI_Ialltoallv", /*replayable=*/true, hand_back);
}

}  // namespace ohio::shim
