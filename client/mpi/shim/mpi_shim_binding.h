// How the LD_PRELOAD shim reaches the shared core (client/mpi/served_calls.h): whether it serves a
// call at all, and where it keeps a communicator's state (an attribute of the communicator, so
// the state is freed with it).
#pragma once

#include <mpi.h>

#include "client/mpi/served_calls.h"

namespace ohio::shim {

// Whether the shim serves a call on `comm`: MPI is initialised, `comm` is a communicator, and
// Open MPI's collective component of ohio does not serve this process (client/mpi/component_mark.h).
bool ShimServes(MPI_Comm comm);

// The state of `comm`, found in its attribute or set up (collectively) by this first call.
StateFor StateOf(MPI_Comm comm);

// The state of `comm` if a call set it up already, else null (nothing is set up).
CommState* KnownState(MPI_Comm comm);

}  // namespace ohio::shim
