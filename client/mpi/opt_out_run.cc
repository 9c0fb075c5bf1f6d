#include "client/mpi/opt_out_run.h"

namespace ohio::shim {

bool GoesToLibraryByRun(OptOutRun& run) {
  if (run.library_left > 0) {
    --run.library_left;
    return true;
  }
  run.under_way = run.in_a_row;
  run.in_a_row = 0;
  return false;
}

void NoteOptedOut(OptOutRun& run) {
  run.in_a_row = run.under_way + 1;
  if (run.in_a_row >= kOptedOutInARow) {
    run.library_left = kLibraryCalls;
    // One more opt-out after the library's calls starts the next of them at once.
    run.in_a_row = kOptedOutInARow - 1;
  }
}

}  // namespace ohio::shim
