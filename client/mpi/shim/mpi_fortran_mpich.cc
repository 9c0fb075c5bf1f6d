// MPICH's Fortran entry points that the shim must define (libohio_mpi_mpich.so only). MPICH's
// mpif.h and `use mpi` bindings (libmpichfort.so: mpi_alltoall_, mpi_wait_, ...) call the C MPI_
// functions, and so does `use mpi_f08` for the functions with buffers (mpi_alltoall_f08ts_
// through MPI_Alltoall): the shim's C entry points serve those as they are. mpi_f08's other
// functions (mpi_wait_f08_, mpi_finalize_f08_, ...) call PMPI_ directly, so a Fortran program's
// MPI_Ialltoall would never complete and its MPI_Finalize would leave no group: the shim defines
// those, which libmpichfort.so defines too, so LD_PRELOAD interposes them.
//
// MPICH's mpi_f08 passes handles as the C ones (an INTEGER each) and statuses as the C
// MPI_Status (its TYPE(MPI_Status) has the same layout); MPI_STATUS_IGNORE and
// MPI_STATUSES_IGNORE are what C sees as MPI_F08_STATUS_IGNORE and MPI_F08_STATUSES_IGNORE.
// Those two are libmpich's in MPICH 4.0 (Debian 12) but libmpichfort's in 4.2 (Debian 13), which
// a C program does not load: referred to weakly, they are null there, where no mpi_f08 call
// can come, and the one shim loads under both.
#include <mpi.h>

#pragma weak MPI_F08_STATUS_IGNORE
#pragma weak MPI_F08_STATUSES_IGNORE

#include "client/mpi/shim/mpi_fortran_requests.h"

namespace ohio::shim {
namespace {

bool IsStatusIgnore(const void* p) { return &MPI_F08_STATUS_IGNORE != nullptr && p == MPI_F08_STATUS_IGNORE; }
bool IsStatusesIgnore(const void* p) { return &MPI_F08_STATUSES_IGNORE != nullptr && p == MPI_F08_STATUSES_IGNORE; }

}  // namespace

const FortranStatusConvention kFortranStatuses = {true, IsStatusIgnore, IsStatusesIgnore};

}  // namespace ohio::shim

using namespace ohio::shim;

extern "C" {

void mpi_wait_f08_(MPI_Fint* request, void* status, MPI_Fint* ierror) { FortranWait(request, status, ierror); }

void mpi_waitall_f08_(MPI_Fint* count, MPI_Fint* requests, void* statuses, MPI_Fint* ierror) {
  FortranWaitall(count, requests, statuses, ierror);
}

void mpi_waitany_f08_(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, void* status, MPI_Fint* ierror) {
  FortranWaitany(count, requests, index, status, ierror);
}

void mpi_waitsome_f08_(MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices, void* statuses,
                       MPI_Fint* ierror) {
  FortranWaitsome(incount, requests, outcount, indices, statuses, ierror);
}

void mpi_test_f08_(MPI_Fint* request, MPI_Fint* flag, void* status, MPI_Fint* ierror) {
  FortranTest(request, flag, status, ierror);
}

void mpi_testall_f08_(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* flag, void* statuses, MPI_Fint* ierror) {
  FortranTestall(count, requests, flag, statuses, ierror);
}

void mpi_testany_f08_(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, MPI_Fint* flag, void* status,
                      MPI_Fint* ierror) {
  FortranTestany(count, requests, index, flag, status, ierror);
}

void mpi_testsome_f08_(MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices, void* statuses,
                       MPI_Fint* ierror) {
  FortranTestsome(incount, requests, outcount, indices, statuses, ierror);
}

void mpi_request_get_status_f08_(MPI_Fint* request, MPI_Fint* flag, void* status, MPI_Fint* ierror) {
  FortranRequestGetStatus(request, flag, status, ierror);
}

void mpi_request_free_f08_(MPI_Fint* request, MPI_Fint* ierror) { FortranRequestFree(request, ierror); }

void mpi_cancel_f08_(MPI_Fint* request, MPI_Fint* ierror) { FortranCancel(request, ierror); }

void mpi_start_f08_(MPI_Fint* request, MPI_Fint* ierror) { FortranStart(request, ierror); }

void mpi_startall_f08_(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* ierror) {
  FortranStartall(count, requests, ierror);
}

void mpi_finalize_f08_(MPI_Fint* ierror) { FortranFinalize(ierror); }

}  // extern "C"
