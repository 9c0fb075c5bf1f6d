// Table rows from simulations, for node counts nobody can measure (docs/SIMULATION.md, "Proposing
// table rows"): the inter-node table's rows from ohio-sim runs of each algorithm, the selection
// table's from sim/compare.sh's ohio-against-SMPI times. Every row ends with the `simulated`
// marker (shm/tables/table_words.h). Pure: the runs are the caller's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "shm/tables/internode_choice.h"
#include "shm/tables/selection_table.h"

namespace ohio::sim {

// One simulated alltoall: N nodes of `ppn` ranks, M bytes per rank pair, run by `internode`
// (what ran, which for a forced hypercube that does not fit is pairwise), in `seconds`.
struct SimulatedPoint {
  uint32_t nodes = 0;
  uint32_t ppn = 0;
  uint64_t bytes_per_rank = 0;
  InterNodeAlgorithm internode = InterNodeAlgorithm::kPairwise;
  double seconds = 0;
};

// Per node count, in increasing M: the fastest algorithm at each M, consecutive Ms of the same
// winner merged into one row for exactly that N, up to the block (M x ppn x ppn) of the last M
// of the run. Calls above the largest M simulated match no row (pairwise), as for a table
// measured up to some size.
InterNodeTable ProposeInterNodeRows(const std::vector<SimulatedPoint>& points);

// sim/compare.sh's CSV (bytes, ohio_sim_us, then smpi_X_us and ohio_over_X per algorithm) for
// one shape: an `ohio` row for each run of consecutive sizes where ohio's time is at most
// `win_ratio` of the fastest SMPI algorithm's, then an `mpi` row for the rest of the shape.
// `source` names the CSV in errors.
Result<SelectionTable> ProposeSelectionRows(const std::string& csv, const std::string& source, uint32_t nodes,
                                            uint32_t ppn, double win_ratio);

}  // namespace ohio::sim
