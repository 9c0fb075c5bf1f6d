// MPI_Ialltoall through ohiod: the call is posted (client/posted_alltoalls.h) and returns a
// generalized request (client/mpi_requests.h); ohiod moves the data from the send buffers to
// the receive buffers of every rank while the ranks compute. Consistency as for MPI_Alltoall
// (client/mpi_shim_state.h); a group spanning nodes is "not supported" on every rank alike and
// falls through to the library's MPI_Ialltoall.
#include <mpi.h>

#include <memory>
#include <string>

#include "client/mpi_requests.h"
#include "client/mpi_shim_state.h"
#include "client/mpi_type_layout.h"
#include "client/ohio.h"

using namespace ohio::shim;

extern "C" {

int MPI_Ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  int ready = 0;
  PMPI_Initialized(&ready);
  if (!ready || comm == MPI_COMM_NULL) {
    return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
  }
  Initialise();
  CommState* st = StateOf(comm, recvcount, recvtype);
  auto fall_through = [&](const std::string& why) {
    FellThrough("MPI_Ialltoall", why);
    return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
  };
  if (st->group == nullptr) return fall_through(st->why);

  std::string why;
  if (ClosedBefore(st, &why)) return fall_through(why);

  const bool in_place = sendbuf == MPI_IN_PLACE;
  CallLayouts layouts;
  why = WhyNotServable(in_place, sendcount, sendtype, recvcount, recvtype, &layouts);
  const ohio::TypeLayout* recv_layout = layouts.recv;
  const ohio::TypeLayout* send_layout = layouts.send;
  if (!why.empty()) {
    // The opt-out is a meeting of the ranks, the one wait inside this call.
    if (ohio_alltoall_skip(st->group) == OHIO_ERR_SKIPPED) return fall_through(why);
    return FailedMidCall(st, comm, "MPI_Ialltoall");
  }

  auto r = std::make_unique<OhioRequest>();
  r->st = st;
  r->comm = comm;
  r->function = "MPI_Ialltoall";
  const size_t bytes = static_cast<size_t>(recvcount) * static_cast<size_t>(recv_layout->size);
  int size = 0;
  if (!send_layout->contiguous() || !recv_layout->contiguous()) PMPI_Comm_size(comm, &size);
  // Non-contiguous data is packed now and unpacked when the request completes; contiguous data
  // is moved by ohiod where it lies.
  const void* send = in_place ? recvbuf : sendbuf;
  if (!send_layout->contiguous()) {
    r->send_packed.resize(bytes * size);
    ohio::PackRuns(*send_layout, send, static_cast<MPI_Aint>(in_place ? recvcount : sendcount) * size,
                   r->send_packed.data());
    send = r->send_packed.data();
  }
  void* recv = recvbuf;
  if (!recv_layout->contiguous()) {
    if (!in_place) r->recv_packed.resize(bytes * size);
    recv = in_place ? r->send_packed.data() : r->recv_packed.data();
    r->recv_layout = recv_layout;
    r->recvbuf = recvbuf;
    r->recv_elements = static_cast<MPI_Aint>(recvcount) * size;
    if (in_place) r->recv_packed.swap(r->send_packed);  // unpacked from recv_packed
  }
  const int rc = ohio_ialltoall(st->group, send, recv, bytes, &r->posted);
  if (rc == OHIO_OK) return StartRequest(std::move(r), request);
  if (rc == OHIO_ERR_NOT_SUPPORTED) return fall_through(ohio_last_error());
  if (rc == OHIO_ERR_INVALID_ARGUMENT) return ProgramError(comm, "MPI_Ialltoall", MPI_ERR_BUFFER);
  return FailedMidCall(st, comm, "MPI_Ialltoall");
}

}  // extern "C"
