// MPI_Finalize of the LD_PRELOAD shim: OHIO_STATS's report and every group left
// (client/mpi/mpi_shim_state.h ReportAndLeave) before the MPI library goes.
#include <mpi.h>

#include "client/mpi/mpi_shim_state.h"

using namespace ohio::shim;

extern "C" {

int MPI_Finalize(void) {
  ReportAndLeave();
  return PMPI_Finalize();
}

}  // extern "C"
