// MPI_Alltoallw through ohiod (client/mpi/mpi_shim_state.h says how the ranks stay consistent).
// Every pair has its own datatype and a displacement in bytes: each block is packed (or
// unpacked) by its own type's layout, and the blocks travel as ohio_alltoallv's bytes.
#include "client/mpi/served_calls.h"

#include <mpi.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "client/mpi/call_selection.h"
#include "client/mpi/deferred_join.h"
#include "client/mpi/mpi_shim_state.h"
#include "client/mpi/mpi_type_layout.h"

namespace {

// One side of the call (send or receive) as ohio's bytes: per rank, its count of its type at its
// byte displacement.
struct Side {
  const void* base;
  const int* counts;
  const int* displs;
  const MPI_Datatype* types;
};

// The layout of every block's type into `layouts`, or why one has none (or a count is negative).
const char* LayoutsOfBlocks(const Side& side, int size, std::vector<const ohio::TypeLayout*>* layouts) {
  layouts->resize(size);
  for (int j = 0; j < size; ++j) {
    if (side.counts[j] < 0) return "a negative count";
    const char* why = nullptr;
    (*layouts)[j] = ohio::LayoutOf(side.types[j], &why);
    if ((*layouts)[j] == nullptr) return why;
  }
  return nullptr;
}

// The side's largest block in bytes (what the selection table weighs for this rank).
uint64_t LargestBlockBytes(const Side& side, int size, const std::vector<const ohio::TypeLayout*>& layouts) {
  uint64_t largest = 0;
  for (int j = 0; j < size; ++j) {
    largest = std::max(largest, static_cast<uint64_t>(side.counts[j]) * static_cast<uint64_t>(layouts[j]->size));
  }
  return largest;
}

// Whether every block of the side lies as it is at a displacement ohio can take (contiguous, not
// before the buffer): then ohio reads or writes the user's buffer directly.
bool UsedWhereItLies(const Side& side, int size, const std::vector<const ohio::TypeLayout*>& layouts) {
  for (int j = 0; j < size; ++j) {
    if (side.counts[j] != 0 && (!layouts[j]->contiguous() || side.displs[j] < 0)) return false;
  }
  return true;
}

// The side's bytes and displacements for ohio. A side used where it lies keeps the caller's
// displacements; another is laid out block after block in `packed` (and, for the send side,
// packed there now, each block by its own type).
void BlockBytes(const Side& side, int size, const std::vector<const ohio::TypeLayout*>& layouts, bool where_it_lies,
                bool pack_now, std::vector<size_t>* bytes, std::vector<size_t>* at, std::vector<uint8_t>* packed) {
  bytes->resize(size);
  at->resize(size);
  size_t next = 0;
  for (int j = 0; j < size; ++j) {
    (*bytes)[j] = static_cast<size_t>(side.counts[j]) * static_cast<size_t>(layouts[j]->size);
    (*at)[j] = where_it_lies ? static_cast<size_t>(side.counts[j] == 0 ? 0 : side.displs[j]) : next;
    if (!where_it_lies) next += (*bytes)[j];
  }
  if (where_it_lies) return;
  packed->resize(next);
  if (!pack_now) return;
  for (int j = 0; j < size; ++j) {
    ohio::PackRuns(*layouts[j], static_cast<const uint8_t*>(side.base) + side.displs[j], side.counts[j],
                   packed->data() + (*at)[j]);
  }
}

}  // namespace

namespace ohio::shim {

int ServeAlltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[],
                   void* recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[],
                   MPI_Comm comm, const StateFor& state_for, const Library& library) {
  // Counts and types differ between ranks: a communicator set up here is sized alike on every rank.
  const HandBackTo hand_back("MPI_Alltoallw", library);
  int decided = MPI_SUCCESS;
  CommState* st = BeginCall(comm, "MPI_Alltoallw", 0, state_for, hand_back, &decided);
  if (st == nullptr) return decided;

  const std::optional<CallVerdict> alike = SelectWhateverTheBytes(*st, SelectedFunction::kAlltoallw);
  if (alike && !alike->serve) return hand_back.HandBack(st, ohio::HandBackReason::kSelectionTable, alike->why);
  if (GoesToLibraryByRun(*OptOutRunOf(st, "MPI_Alltoallw"))) {
    return hand_back.HandBack(st, ohio::HandBackReason::kRankOptedOut, kLibraryByOptOutRun);
  }
  // Every rank is here in this call: the table serves it alike on all.
  if (!JoinedForThisCall(st, comm, 0)) return hand_back(st->why);
  const GroupInUse in_use(st);

  const bool in_place = sendbuf == MPI_IN_PLACE;
  const Side recv_side = {recvbuf, recvcounts, rdispls, recvtypes};
  // In place, what goes to rank j is where what comes from rank j lands, by the receive type.
  const Side send_side = in_place ? recv_side : Side{sendbuf, sendcounts, sdispls, sendtypes};
  int size = 0;
  PMPI_Comm_size(comm, &size);
  const char* no_layout = LayoutsOfBlocks(recv_side, size, &st->recv_layouts);
  if (no_layout == nullptr) no_layout = LayoutsOfBlocks(send_side, size, &st->send_layouts);
  if (no_layout != nullptr) return OptOut(st, comm, "MPI_Alltoallw", no_layout, hand_back);
  if (!alike) {
    const CallVerdict own =
        SelectOwnPart(*st, SelectedFunction::kAlltoallw,
                      std::max(LargestBlockBytes(send_side, size, st->send_layouts),
                               LargestBlockBytes(recv_side, size, st->recv_layouts)));
    if (!own.serve) return OptOut(st, comm, "MPI_Alltoallw", own.why, hand_back);
  }
  // In place, the others read this rank's data while it receives into the same buffer: send
  // from a packed copy instead.
  const bool send_where_it_lies = !in_place && UsedWhereItLies(send_side, size, st->send_layouts);
  const bool recv_where_it_lies = UsedWhereItLies(recv_side, size, st->recv_layouts);
  BlockBytes(send_side, size, st->send_layouts, send_where_it_lies, true, &st->send_bytes, &st->send_at,
             &st->send_packed);
  BlockBytes(recv_side, size, st->recv_layouts, recv_where_it_lies, false, &st->recv_bytes, &st->recv_at,
             &st->recv_packed);
  const void* send = send_where_it_lies ? sendbuf : st->send_packed.data();
  void* recv = recv_where_it_lies ? recvbuf : st->recv_packed.data();
  auto unpack = [&] {
    if (recv_where_it_lies) return;
    for (int i = 0; i < size; ++i) {
      ohio::UnpackRuns(*st->recv_layouts[i], st->recv_packed.data() + st->recv_at[i], recvcounts[i],
                       static_cast<uint8_t*>(recvbuf) + rdispls[i]);
    }
  };
  return ServeAlltoallvBytes(st, comm, "MPI_Alltoallw", size, send, recv, in_place && recv == recvbuf, recvbuf, unpack,
                             hand_back);
}

}  // namespace ohio::shim
