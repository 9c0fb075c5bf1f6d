// An MPI_Alltoall-shaped call started to ohiod, for MPI_Ialltoall and for each MPI_Start of a
// persistent MPI_Alltoall_init: the same choices (the selection table's verdict for ialltoall,
// or OHIO_IALLTOALL_MIN_BYTES where it is set; layouts; packing) for both, so that both take the
// same path on every rank.
#include <memory>
#include <string>
#include <vector>

#include "client/mpi/call_selection.h"
#include "client/mpi/deferred_join.h"
#include "client/mpi/mpi_library_pack.h"
#include "client/mpi/mpi_nonblocking_request.h"
#include "client/mpi/mpi_shim_state.h"
#include "client/mpi/mpi_type_layout.h"
#include "client/libohio/ohio.h"
#include "client/mpi/served_calls.h"

namespace ohio::shim {

int StartNonblockingAlltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm, const char* function, const StateFor& state_for,
                 const Library& library, const Start& start) {
  const HandBackTo hand_back(function, library);
  int decided = MPI_SUCCESS;
  CommState* st =
      BeginCall(comm, function, FirstCallBytes(recvcount, recvtype), state_for, hand_back, &decided);
  if (st == nullptr) return decided;
  const bool in_place = sendbuf == MPI_IN_PLACE;
  // Bytes per rank pair are the same on every rank (MPI's matching rule), so is this choice.
  const uint64_t call_bytes = PairBytes(in_place, sendcount, sendtype, recvcount, recvtype);
  if (st->ialltoall_min_set) {
    if (call_bytes < st->ialltoall_min_bytes) {
      return hand_back.HandBack(st, ohio::HandBackReason::kIalltoallMinBytes,
                                   "the call's " + std::to_string(call_bytes) +
                                       " bytes per rank are below OHIO_IALLTOALL_MIN_BYTES = " +
                                       std::to_string(st->ialltoall_min_bytes));
    }
  } else if (HandedToLibraryByTable(st, function, SelectedFunction::kIalltoall, call_bytes)) {
    return library();
  }
  // Every rank is here in this call: the table serves it alike on all.
  if (!JoinedForThisCall(st, comm, FirstCallBytes(recvcount, recvtype))) return hand_back(st->why);
  const GroupInUse in_use(st);
  // A datatype without a layout is packed by the library (client/mpi/mpi_library_pack.h): a
  // rank cannot opt out of a nonblocking call alone.
  const MPI_Datatype send_type = in_place ? recvtype : sendtype;
  const int send_count = in_place ? recvcount : sendcount;
  const CallLayouts layouts = LayoutsOf(in_place, sendtype, recvtype);
  int send_size = 0, recv_size = 0;
  PMPI_Type_size(send_type, &send_size);
  PMPI_Type_size(recvtype, &recv_size);
  // Sizes that differ are the program's error. Where every rank made it, all opt out together
  // and the library reports it. Where this rank alone did, it opts out and calls the library,
  // which finds no partners (that call never completes), while the ranks that started the call
  // through ohio fail at their Wait when the group's timeout closes the group (MPI_ERR_OTHER).
  if (recvcount < 0 || send_count < 0 ||
      static_cast<long long>(send_count) * send_size != static_cast<long long>(recvcount) * recv_size) {
    return OptOut(st, comm, function, "send and receive sizes differ", hand_back);
  }

  auto r = std::make_unique<OhioRequest>();
  r->st = st;
  r->comm = comm;
  r->function = function;
  const size_t bytes = static_cast<size_t>(recvcount) * static_cast<size_t>(recv_size);
  int size = 0;
  PMPI_Comm_size(comm, &size);
  // The library would not pack this rank's datatype as the bytes every rank agrees on (never so
  // in Open MPI or MPICH, native representation): the call fails here with the reason. Ranks
  // whose datatypes pack started it through ohio: theirs fail at their Wait when the group's
  // timeout closes the group (MPI_ERR_OTHER); none waits forever for a partner.
  std::vector<size_t> blocks, at;
  if (layouts.recv == nullptr) {
    r->recv_counts.assign(size, recvcount);
    r->recv_typed_at = BlockPlaces(recvtype, size, recvcount);
    const char* why = LibraryBlocks(recvtype, r->recv_counts, r->recv_typed_at, nullptr, &blocks, &r->recv_at,
                                    &r->recv_packed);
    if (why != nullptr) return FailCall(comm, function, why);
  }
  // Non-contiguous data is packed now and unpacked when the request completes; contiguous data
  // is moved by ohiod where it lies.
  const void* send = in_place ? recvbuf : sendbuf;
  if (layouts.send == nullptr) {
    const char* why = LibraryBlocks(send_type, std::vector<int>(size, send_count),
                                    BlockPlaces(send_type, size, send_count), send, &blocks, &at, &r->send_packed);
    if (why != nullptr) return FailCall(comm, function, why);
    send = r->send_packed.data();
  } else if (!layouts.send->contiguous()) {
    r->send_packed.resize(bytes * size);
    ohio::PackRuns(*layouts.send, send, static_cast<MPI_Aint>(send_count) * size, r->send_packed.data());
    send = r->send_packed.data();
  }
  void* recv = recvbuf;
  if (layouts.recv == nullptr || !layouts.recv->contiguous()) {
    if (!in_place) r->recv_packed.resize(bytes * size);
    recv = in_place ? r->send_packed.data() : r->recv_packed.data();
    r->recvbuf = recvbuf;
    if (in_place) r->recv_packed.swap(r->send_packed);  // unpacked from recv_packed
  }
  if (layouts.recv != nullptr && !layouts.recv->contiguous()) {
    r->recv_layout = layouts.recv;
    r->recv_elements = static_cast<MPI_Aint>(recvcount) * size;
  }
  const int rc = ohio_ialltoall(st->group, send, recv, bytes, &r->call);
  if (rc == OHIO_OK) {
    if (layouts.recv == nullptr) PMPI_Type_dup(recvtype, &r->recv_library_type);
    st->nonblocking_outstanding.fetch_add(1, std::memory_order_relaxed);
    return start(std::move(r));
  }
  if (rc == OHIO_ERR_NOT_SUPPORTED) return hand_back.HandBack(st, ohio::HandBackReason::kNotSupported, ohio_last_error());
  if (rc == OHIO_ERR_INVALID_ARGUMENT) return ProgramError(comm, function, MPI_ERR_BUFFER);
  return FailedMidCall(st, comm, function, /*replayable=*/true, hand_back);
}

}  // namespace ohio::shim
