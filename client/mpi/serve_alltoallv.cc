// MPI_Alltoallv through ohiod (client/mpi/mpi_shim_state.h says how the ranks stay consistent).
// Counts and displacements become ohio's bytes; non-contiguous types are packed block by block.
#include "client/mpi/served_calls.h"

#include <mpi.h>

#include <vector>

#include "client/mpi/mpi_shim_state.h"
#include "client/mpi/mpi_type_layout.h"
#include "client/mpi/mpi_vector_bytes.h"
#include "client/libohio/ohio.h"

namespace ohio::shim {

int ServeAlltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                   void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   const StateFor& state_for, const Library& library) {
  // Counts differ between ranks: a communicator set up here is sized alike on every rank.
  const FallThroughTo fall_through("MPI_Alltoallv", library);
  int decided = MPI_SUCCESS;
  CommState* st = BeginCall(comm, "MPI_Alltoallv", 0, state_for, fall_through, &decided);
  if (st == nullptr) return decided;

  const bool in_place = sendbuf == MPI_IN_PLACE;
  int size = 0;
  PMPI_Comm_size(comm, &size);
  const CallLayouts layouts = ServableVectorLayouts(in_place, sendcounts, sendtype, recvcounts, recvtype, size);
  if (layouts.why != nullptr) return OptOut(st, comm, "MPI_Alltoallv", layouts.why, fall_through);
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
  Retain(st, comm, size, send, st->send_bytes.data(), st->send_at.data());
  const int rc = ohio_alltoallv(st->group, send, st->send_bytes.data(), st->send_at.data(), recv,
                                st->recv_bytes.data(), st->recv_at.data());
  auto unpack = [&] {
    if (pack_recv) UnpackVector(*layouts.recv, size, recvcounts, rdispls, st->recv_at, st->recv_packed.data(), recvbuf);
  };
  if (rc == OHIO_OK) {
    unpack();
    Served("MPI_Alltoallv");
    return MPI_SUCCESS;
  }
  if (rc == OHIO_ERR_SKIPPED) return fall_through("another rank could not use ohio for this call");
  // Every rank reached it alike: on one node ranks may not read each other's memory, across
  // nodes the call would take more rounds of the group's buffers than are served.
  if (rc == OHIO_ERR_NOT_SUPPORTED) return fall_through(ohio_last_error());
  if (rc == OHIO_ERR_SIZE_MISMATCH) return ProgramError(comm, "MPI_Alltoallv", MPI_ERR_COUNT);
  if (rc == OHIO_ERR_INVALID_ARGUMENT) return ProgramError(comm, "MPI_Alltoallv", MPI_ERR_ARG);
  return FailedInBlockingCall(st, comm, "MPI_Alltoallv", in_place && recv == recvbuf, recvbuf,
                              Delivery{recv, st->recv_bytes.data(), st->recv_at.data(), unpack}, fall_through);
}

}  // namespace ohio::shim
