// The simulations `ohio-sim propose` runs (docs/SIMULATION.md, "Proposing table rows"): each
// inter-node algorithm forced at each node count, each simulation a process of ohio-sim's own
// (SimGrid keeps one engine per process), their medians gathered as points for
// sim/table_proposal.h. The doing half of propose; the rows are table_proposal's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "sim/table_proposal.h"

namespace ohio::sim {

struct ProposeRuns {
  std::string self;  // the ohio-sim binary to run
  std::string platform, calibration;
  std::vector<std::string> cfg;  // SimGrid settings, name:value
  std::vector<uint64_t> node_counts;
  uint32_t ppn = 0;
  std::string bytes;  // ohio-sim run's --bytes list
};

// One point per node count, M and algorithm that ran as forced (a hypercube that does not fit
// runs pairwise: left out, pairwise's own run stands for it). Progress goes to stderr. Errors: a
// simulation that failed (its own error printed before), a report that is not JSON.
Result<std::vector<SimulatedPoint>> SimulateEachInterNode(const ProposeRuns& runs);

}  // namespace ohio::sim
