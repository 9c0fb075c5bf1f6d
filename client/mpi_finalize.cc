// MPI_Finalize: OHIO_STATS's report (served and fell through per function, with reasons), and
// every group left before the MPI library goes.
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "client/mpi_shim_state.h"
#include "client/ohio.h"

using namespace ohio::shim;

extern "C" {

int MPI_Finalize(void) {
  Process& p = P();
  if (p.initialised) {
    const int kCount = kFunctionCount;
    std::vector<long> local(2 * kCount), total(2 * kCount);
    for (int f = 0; f < kCount; ++f) {
      local[2 * f] = p.tallies[kFunctions[f]].served;
      local[2 * f + 1] = p.tallies[kFunctions[f]].fell_through;
    }
    PMPI_Reduce(local.data(), total.data(), 2 * kCount, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (p.stats && rank == 0) {
      for (int f = 0; f < kCount; ++f) {
        std::fprintf(stderr, "ohio: %ld %s calls served by ohiod, %ld fell through to the MPI library (all ranks)\n",
                     total[2 * f], kFunctions[f], total[2 * f + 1]);
        for (const auto& [why, n] : p.tallies[kFunctions[f]].reasons) {
          std::fprintf(stderr, "ohio:   rank 0: %s: %ld fell through: %s\n", kFunctions[f], n, why.c_str());
        }
      }
    }
    // Attributes of MPI_COMM_WORLD are not deleted by every MPI at finalize: leave explicitly.
    for (CommState* st : p.states) {
      if (st->group != nullptr) ohio_leave(st->group);
      st->group = nullptr;
      if (st->agreement != MPI_COMM_NULL) PMPI_Comm_free(&st->agreement);
    }
    if (p.client != nullptr) ohio_disconnect(p.client);
    p.client = nullptr;
  }
  return PMPI_Finalize();
}

}  // extern "C"
