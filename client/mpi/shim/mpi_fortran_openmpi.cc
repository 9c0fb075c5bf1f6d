// Open MPI's Fortran entry points, defined by the shim (libohio_mpi_openmpi.so only). Open MPI's
// Fortran bindings (libmpi_mpifh.so) call PMPI_ functions, never the C MPI_ ones, so without
// these a Fortran program's collectives never reach the shim. Every symbol here is one
// libmpi_mpifh.so or libmpi_usempif08.so defines, so LD_PRELOAD interposes it:
//  - mpif.h and `use mpi` call mpi_alltoall_ (or the other spellings a compiler may use:
//    mpi_alltoall, mpi_alltoall__, MPI_ALLTOALL);
//  - `use mpi_f08` calls mpi_alltoall_f08_ in libmpi_usempif08.so, which calls ompi_alltoall_f,
//    the function behind all the spellings above; its MPI_Test family calls pmpi_test_ and the
//    like instead, which the shim leaves to profilers, so it defines mpi_test_f08_ and the like.
// The Alltoall family, the Wait and Test families, MPI_Request_free, MPI_Cancel and
// MPI_Finalize: the functions the shim serves, and what completes and reports them.
#include <mpi.h>

#include <vector>

#include "client/mpi/shim/mpi_fortran_requests.h"

// Open MPI's Fortran constants are common blocks in libmpi.so, under the name its Fortran
// compiler gave them; which spelling exists depends on that compiler, so all are weak.
extern "C" {
extern MPI_Fint MPI_FORTRAN_IN_PLACE __attribute__((weak));
extern MPI_Fint mpi_fortran_in_place __attribute__((weak));
extern MPI_Fint mpi_fortran_in_place_ __attribute__((weak));
extern MPI_Fint mpi_fortran_in_place__ __attribute__((weak));
extern MPI_Fint MPI_FORTRAN_BOTTOM __attribute__((weak));
extern MPI_Fint mpi_fortran_bottom __attribute__((weak));
extern MPI_Fint mpi_fortran_bottom_ __attribute__((weak));
extern MPI_Fint mpi_fortran_bottom__ __attribute__((weak));
extern MPI_Fint MPI_FORTRAN_STATUS_IGNORE __attribute__((weak));
extern MPI_Fint mpi_fortran_status_ignore __attribute__((weak));
extern MPI_Fint mpi_fortran_status_ignore_ __attribute__((weak));
extern MPI_Fint mpi_fortran_status_ignore__ __attribute__((weak));
extern MPI_Fint MPI_FORTRAN_STATUSES_IGNORE __attribute__((weak));
extern MPI_Fint mpi_fortran_statuses_ignore __attribute__((weak));
extern MPI_Fint mpi_fortran_statuses_ignore_ __attribute__((weak));
extern MPI_Fint mpi_fortran_statuses_ignore__ __attribute__((weak));
}

namespace ohio::shim {
namespace {

// Whether `p` is one of a constant's spellings that exist (an absent weak symbol is null).
bool IsOneOf(const void* p, const MPI_Fint* a, const MPI_Fint* b, const MPI_Fint* c, const MPI_Fint* d) {
  return p != nullptr && (p == a || p == b || p == c || p == d);
}

bool IsInPlace(const void* p) {
  return IsOneOf(p, &MPI_FORTRAN_IN_PLACE, &mpi_fortran_in_place, &mpi_fortran_in_place_, &mpi_fortran_in_place__);
}

bool IsBottom(const void* p) {
  return IsOneOf(p, &MPI_FORTRAN_BOTTOM, &mpi_fortran_bottom, &mpi_fortran_bottom_, &mpi_fortran_bottom__);
}

bool IsStatusIgnore(const void* p) {
  return IsOneOf(p, &MPI_FORTRAN_STATUS_IGNORE, &mpi_fortran_status_ignore, &mpi_fortran_status_ignore_,
                 &mpi_fortran_status_ignore__);
}

bool IsStatusesIgnore(const void* p) {
  return IsOneOf(p, &MPI_FORTRAN_STATUSES_IGNORE, &mpi_fortran_statuses_ignore, &mpi_fortran_statuses_ignore_,
                 &mpi_fortran_statuses_ignore__);
}

// A buffer argument as C sees it: Fortran's MPI_BOTTOM is C's (address 0).
void* Buffer(void* fortran) { return IsBottom(fortran) ? MPI_BOTTOM : fortran; }

// A send buffer may also be MPI_IN_PLACE.
const void* SendBuffer(void* fortran) { return IsInPlace(fortran) ? MPI_IN_PLACE : Buffer(fortran); }

// A send-side argument (count, counts, displacements, type or types) as the C call gets it. In
// place, MPI ignores them all and the binding leaves them undefined: a program may pass an array
// shorter than the communicator, or of no element. The receive side's stand in for them, which
// the C functions ignore as well (and Open MPI's checks find present), so nothing of the send
// side is read.
template <typename T>
T* SendSide(void* sendbuf, T* send, T* recv) {
  return IsInPlace(sendbuf) ? recv : send;
}

// MPI_Alltoallw's per-rank datatypes, one per rank of the (remote, for an intercommunicator) group.
std::vector<MPI_Datatype> Types(const MPI_Fint* fortran, MPI_Comm comm) {
  int inter = 0, size = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) {
    PMPI_Comm_remote_size(comm, &size);
  } else {
    PMPI_Comm_size(comm, &size);
  }
  std::vector<MPI_Datatype> types(size > 0 ? size : 0);
  for (size_t i = 0; i < types.size(); ++i) types[i] = PMPI_Type_f2c(fortran[i]);
  return types;
}

}  // namespace

const FortranStatusConvention kFortranStatuses = {false, IsStatusIgnore, IsStatusesIgnore};

}  // namespace ohio::shim

using namespace ohio::shim;

// The four spellings of mpif.h's and `use mpi`'s symbol for one function, as aliases of `impl`.
#define OHIO_FORTRAN_SPELLINGS(lower, upper, impl, params) \
  void lower params __attribute__((alias(#impl)));        \
  void lower##_ params __attribute__((alias(#impl)));     \
  void lower##__ params __attribute__((alias(#impl)));    \
  void upper params __attribute__((alias(#impl)))

extern "C" {

void ompi_alltoall_f(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcount,
                     MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* ierror) {
  SetFortranError(ierror, MPI_Alltoall(SendBuffer(sendbuf), *SendSide(sendbuf, sendcount, recvcount),
                                       PMPI_Type_f2c(*SendSide(sendbuf, sendtype, recvtype)), Buffer(recvbuf),
                                       *recvcount, PMPI_Type_f2c(*recvtype), PMPI_Comm_f2c(*comm)));
}
OHIO_FORTRAN_SPELLINGS(mpi_alltoall, MPI_ALLTOALL, ompi_alltoall_f,
                       (void*, MPI_Fint*, MPI_Fint*, void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*));

void ompi_alltoallv_f(void* sendbuf, MPI_Fint* sendcounts, MPI_Fint* sdispls, MPI_Fint* sendtype, void* recvbuf,
                      MPI_Fint* recvcounts, MPI_Fint* rdispls, MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* ierror) {
  SetFortranError(ierror, MPI_Alltoallv(SendBuffer(sendbuf), SendSide(sendbuf, sendcounts, recvcounts),
                                        SendSide(sendbuf, sdispls, rdispls),
                                        PMPI_Type_f2c(*SendSide(sendbuf, sendtype, recvtype)), Buffer(recvbuf),
                                        recvcounts, rdispls, PMPI_Type_f2c(*recvtype), PMPI_Comm_f2c(*comm)));
}
OHIO_FORTRAN_SPELLINGS(mpi_alltoallv, MPI_ALLTOALLV, ompi_alltoallv_f,
                       (void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*,
                        MPI_Fint*));

void ompi_alltoallw_f(void* sendbuf, MPI_Fint* sendcounts, MPI_Fint* sdispls, MPI_Fint* sendtypes, void* recvbuf,
                      MPI_Fint* recvcounts, MPI_Fint* rdispls, MPI_Fint* recvtypes, MPI_Fint* comm, MPI_Fint* ierror) {
  const MPI_Comm c_comm = PMPI_Comm_f2c(*comm);
  const std::vector<MPI_Datatype> c_sendtypes = Types(SendSide(sendbuf, sendtypes, recvtypes), c_comm);
  const std::vector<MPI_Datatype> c_recvtypes = Types(recvtypes, c_comm);
  SetFortranError(ierror, MPI_Alltoallw(SendBuffer(sendbuf), SendSide(sendbuf, sendcounts, recvcounts),
                                        SendSide(sendbuf, sdispls, rdispls), c_sendtypes.data(), Buffer(recvbuf),
                                        recvcounts, rdispls, c_recvtypes.data(), c_comm));
}
OHIO_FORTRAN_SPELLINGS(mpi_alltoallw, MPI_ALLTOALLW, ompi_alltoallw_f,
                       (void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*,
                        MPI_Fint*));

void ompi_ialltoall_f(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcount,
                      MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* request, MPI_Fint* ierror) {
  MPI_Request c_request = MPI_REQUEST_NULL;
  const int rc = MPI_Ialltoall(SendBuffer(sendbuf), *SendSide(sendbuf, sendcount, recvcount),
                               PMPI_Type_f2c(*SendSide(sendbuf, sendtype, recvtype)), Buffer(recvbuf), *recvcount,
                               PMPI_Type_f2c(*recvtype), PMPI_Comm_f2c(*comm), &c_request);
  if (rc == MPI_SUCCESS) *request = PMPI_Request_c2f(c_request);
  SetFortranError(ierror, rc);
}
OHIO_FORTRAN_SPELLINGS(mpi_ialltoall, MPI_IALLTOALL, ompi_ialltoall_f,
                       (void*, MPI_Fint*, MPI_Fint*, void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*));

void ompi_ialltoallv_f(void* sendbuf, MPI_Fint* sendcounts, MPI_Fint* sdispls, MPI_Fint* sendtype, void* recvbuf,
                       MPI_Fint* recvcounts, MPI_Fint* rdispls, MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* request,
                       MPI_Fint* ierror) {
  MPI_Request c_request = MPI_REQUEST_NULL;
  const int rc = MPI_Ialltoallv(SendBuffer(sendbuf), SendSide(sendbuf, sendcounts, recvcounts),
                                SendSide(sendbuf, sdispls, rdispls),
                                PMPI_Type_f2c(*SendSide(sendbuf, sendtype, recvtype)), Buffer(recvbuf), recvcounts,
                                rdispls, PMPI_Type_f2c(*recvtype), PMPI_Comm_f2c(*comm), &c_request);
  if (rc == MPI_SUCCESS) *request = PMPI_Request_c2f(c_request);
  SetFortranError(ierror, rc);
}
OHIO_FORTRAN_SPELLINGS(mpi_ialltoallv, MPI_IALLTOALLV, ompi_ialltoallv_f,
                       (void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*,
                        MPI_Fint*, MPI_Fint*));

void ompi_wait_f(MPI_Fint* request, MPI_Fint* status, MPI_Fint* ierror) { FortranWait(request, status, ierror); }
OHIO_FORTRAN_SPELLINGS(mpi_wait, MPI_WAIT, ompi_wait_f, (MPI_Fint*, MPI_Fint*, MPI_Fint*));

void ompi_waitall_f(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* statuses, MPI_Fint* ierror) {
  FortranWaitall(count, requests, statuses, ierror);
}
OHIO_FORTRAN_SPELLINGS(mpi_waitall, MPI_WAITALL, ompi_waitall_f, (MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*));

void ompi_waitany_f(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, MPI_Fint* status, MPI_Fint* ierror) {
  FortranWaitany(count, requests, index, status, ierror);
}
OHIO_FORTRAN_SPELLINGS(mpi_waitany, MPI_WAITANY, ompi_waitany_f,
                       (MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*));

void ompi_waitsome_f(MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices, MPI_Fint* statuses,
                     MPI_Fint* ierror) {
  FortranWaitsome(incount, requests, outcount, indices, statuses, ierror);
}
OHIO_FORTRAN_SPELLINGS(mpi_waitsome, MPI_WAITSOME, ompi_waitsome_f,
                       (MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*));

// The Test family and MPI_Request_get_status, also under mpi_f08's symbols (see above).
void ompi_test_f(MPI_Fint* request, MPI_Fint* flag, MPI_Fint* status, MPI_Fint* ierror) {
  FortranTest(request, flag, status, ierror);
}
OHIO_FORTRAN_SPELLINGS(mpi_test, MPI_TEST, ompi_test_f, (MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*));
void mpi_test_f08_(MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*) __attribute__((alias("ompi_test_f")));

void ompi_testall_f(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* flag, MPI_Fint* statuses, MPI_Fint* ierror) {
  FortranTestall(count, requests, flag, statuses, ierror);
}
OHIO_FORTRAN_SPELLINGS(mpi_testall, MPI_TESTALL, ompi_testall_f,
                       (MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*));
void mpi_testall_f08_(MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*) __attribute__((alias("ompi_testall_f")));

void ompi_testany_f(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, MPI_Fint* flag, MPI_Fint* status,
                    MPI_Fint* ierror) {
  FortranTestany(count, requests, index, flag, status, ierror);
}
OHIO_FORTRAN_SPELLINGS(mpi_testany, MPI_TESTANY, ompi_testany_f,
                       (MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*));
void mpi_testany_f08_(MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*)
    __attribute__((alias("ompi_testany_f")));

void ompi_testsome_f(MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices, MPI_Fint* statuses,
                     MPI_Fint* ierror) {
  FortranTestsome(incount, requests, outcount, indices, statuses, ierror);
}
OHIO_FORTRAN_SPELLINGS(mpi_testsome, MPI_TESTSOME, ompi_testsome_f,
                       (MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*));
void mpi_testsome_f08_(MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*)
    __attribute__((alias("ompi_testsome_f")));

void ompi_request_get_status_f(MPI_Fint* request, MPI_Fint* flag, MPI_Fint* status, MPI_Fint* ierror) {
  FortranRequestGetStatus(request, flag, status, ierror);
}
OHIO_FORTRAN_SPELLINGS(mpi_request_get_status, MPI_REQUEST_GET_STATUS, ompi_request_get_status_f,
                       (MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*));
void mpi_request_get_status_f08_(MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*)
    __attribute__((alias("ompi_request_get_status_f")));

void ompi_request_free_f(MPI_Fint* request, MPI_Fint* ierror) { FortranRequestFree(request, ierror); }
OHIO_FORTRAN_SPELLINGS(mpi_request_free, MPI_REQUEST_FREE, ompi_request_free_f, (MPI_Fint*, MPI_Fint*));

void ompi_cancel_f(MPI_Fint* request, MPI_Fint* ierror) { FortranCancel(request, ierror); }
OHIO_FORTRAN_SPELLINGS(mpi_cancel, MPI_CANCEL, ompi_cancel_f, (MPI_Fint*, MPI_Fint*));

void ompi_finalize_f(MPI_Fint* ierror) { FortranFinalize(ierror); }
OHIO_FORTRAN_SPELLINGS(mpi_finalize, MPI_FINALIZE, ompi_finalize_f, (MPI_Fint*));

}  // extern "C"
