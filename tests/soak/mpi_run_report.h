// What one mpirun run of the soak's MPI program (tests/soak/mpi_soak_check.c, run with
// --tag-output) said, rank by rank: its tally, the error class of every call that failed, and
// the reasons the shim printed for its failures ("ohio: MPI_Alltoall failed: <why>"). The soak
// holds every failed call to MPI_ERR_OTHER with a reason printed by the same rank.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ohio::soak {

struct MpiRankTally {
  uint32_t calls = 0, ok = 0, failed = 0;
  uint64_t wrong_bytes = 0;
};

struct MpiRankReport {
  std::optional<MpiRankTally> tally;  // unset if the rank never printed it
  std::vector<std::string> failed_with;  // each failed call's class: "MPI_ERR_OTHER" or "class K"
  std::vector<std::string> reasons;   // what the shim said of each failure on this rank
};

// Keyed by MPI rank; lines without Open MPI's "[job,rank]<stdout>:" tag are ignored.
std::map<uint32_t, MpiRankReport> ParseMpiRun(const std::string& output);

}  // namespace ohio::soak
