// The shim's request completion (MPI_Wait and MPI_Test families, MPI_Request_free, MPI_Cancel,
// MPI_Start, MPI_Startall) and MPI_Finalize in the Fortran calling convention, for the Fortran
// entry points that each MPI's bindings reach without passing through the C MPI_ symbols
// (client/mpi/shim/mpi_fortran_openmpi.cc, client/mpi/shim/mpi_fortran_mpich.cc). A Fortran program's
// MPI_Ialltoall is a generalized request of ohio's (client/mpi/shim/mpi_requests.h): unless its Wait and
// Test reach the shim's C functions, nothing completes it and the program waits forever; unless
// its MPI_Finalize does, its groups are not left and OHIO_STATS says nothing.
//
// Everything is passed by reference, as Fortran does; `ierror` may be null (mpi_f08's is
// OPTIONAL). Handles are converted with the library's f2c and c2f functions; array indices are
// Fortran's, from 1. Each converts its arguments and calls the shim's own C entry point, so the
// C path decides everything.
#pragma once

#include <mpi.h>

namespace ohio::shim {

// How the bindings whose symbols the shim defines pass statuses: as Fortran INTEGER arrays of
// MPI_STATUS_SIZE (mpif.h and `use mpi`; Open MPI's mpi_f08 too, whose MPI_Status has that
// layout), converted with MPI_Status_c2f, or as the C MPI_Status itself (MPICH's mpi_f08); and
// the addresses that mean MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE. Each MPI's file defines it.
struct FortranStatusConvention {
  bool c_layout;
  bool (*is_status_ignore)(const void* status);
  bool (*is_statuses_ignore)(const void* statuses);
};
extern const FortranStatusConvention kFortranStatuses;

void FortranWait(MPI_Fint* request, void* status, MPI_Fint* ierror);
void FortranWaitall(const MPI_Fint* count, MPI_Fint* requests, void* statuses, MPI_Fint* ierror);
void FortranWaitany(const MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, void* status, MPI_Fint* ierror);
void FortranWaitsome(const MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices,
                     void* statuses, MPI_Fint* ierror);
// `flag` is a Fortran LOGICAL: 1 is .TRUE. for gfortran, with which both MPIs' bindings are built.
void FortranTest(MPI_Fint* request, MPI_Fint* flag, void* status, MPI_Fint* ierror);
void FortranTestall(const MPI_Fint* count, MPI_Fint* requests, MPI_Fint* flag, void* statuses, MPI_Fint* ierror);
void FortranTestany(const MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, MPI_Fint* flag, void* status,
                    MPI_Fint* ierror);
void FortranTestsome(const MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices,
                     void* statuses, MPI_Fint* ierror);
void FortranRequestGetStatus(const MPI_Fint* request, MPI_Fint* flag, void* status, MPI_Fint* ierror);
void FortranRequestFree(MPI_Fint* request, MPI_Fint* ierror);
void FortranCancel(const MPI_Fint* request, MPI_Fint* ierror);
void FortranFinalize(MPI_Fint* ierror);
// For MPI_Alltoall_init's persistent requests, where the shim serves it (client/mpi/shim/mpi_alltoall_init.cc).
void FortranStart(MPI_Fint* request, MPI_Fint* ierror);
void FortranStartall(const MPI_Fint* count, MPI_Fint* requests, MPI_Fint* ierror);

// Sets the Fortran error argument if the binding passed one.
inline void SetFortranError(MPI_Fint* ierror, int rc) {
  if (ierror != nullptr) *ierror = static_cast<MPI_Fint>(rc);
}

}  // namespace ohio::shim
