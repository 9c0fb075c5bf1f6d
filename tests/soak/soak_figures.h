// What a soak run counts, and its summary as printed at the end (and recorded in docs/SOAK.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tests/soak/daemon_vitals.h"

namespace ohio::soak {

struct NodeFigures {
  std::string name;
  DaemonVitals before;  // once every job had run once, before the chaos
  DaemonVitals after;   // once every job had left
  uint32_t restarts = 0;
};

// The MPI job's (tests/soak/mpi_soak_job.h), summed over its ranks.
struct MpiFigures {
  uint64_t runs = 0;          // mpirun runs
  uint64_t calls_ok = 0;      // MPI_Alltoall calls that returned MPI_SUCCESS with every byte right
  uint64_t calls_failed = 0;  // that returned MPI_ERR_OTHER
  uint64_t wrong_bytes = 0;   // in calls that returned MPI_SUCCESS
  uint64_t reasons = 0;       // "ohio: MPI_Alltoall failed: ..." lines of the shim
};

// The hostile uid's attacks: floods of a daemon's control socket (tests/tools/control_flood) and
// large nonblocking calls (tests/tools/large_ialltoall_rank).
struct HostileFigures {
  uint64_t connections = 0;   // opened by the floods
  uint64_t cut_off = 0;       // of them, closed by the daemon before their partial frame was sent
  uint64_t large_calls = 0;   // 32 MiB nonblocking calls moved for it
  uint64_t joins = 0;         // oversized joins it sent (tests/tools/control_join_flood)
};

struct Figures {
  uint64_t calls_wanted = 0;
  uint64_t calls_verified = 0;  // calls whose every byte every rank checked
  uint64_t calls_failed = 0;    // calls that returned an error (one per failed job run)
  uint64_t runs = 0;            // job runs (a new group each)
  uint64_t wrong_bytes = 0;
  uint64_t garbage_connections = 0;
  uint64_t slowest_kill_to_end_ms = 0;  // from killing a rank to its run's last rank ending
  uint64_t longest_stop_ms = 0;         // a daemon held by SIGSTOP
  MpiFigures mpi;
  HostileFigures hostile;
  std::map<std::string, uint64_t> faults;           // by kind
  std::map<std::string, uint64_t> errors_by_cause;  // one per rank that reported an error
  std::vector<std::string> problems;                // each one fails the soak
  std::vector<NodeFigures> nodes;
  double seconds = 0;
};

std::string FormatFigures(const Figures& f);

}  // namespace ohio::soak
