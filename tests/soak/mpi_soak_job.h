// The soak's MPI job: successive real mpirun (Open MPI) runs of tests/soak/mpi_soak_check.c with
// libohio_mpi preloaded, its ranks spread over some of the soak's nodes (tests/mpi/on_node.sh
// points each at its node's daemon), under MPI_ERRORS_RETURN while the chaos restarts and stops
// those daemons. A run is judged when it ends: no call may succeed with a wrong byte, every
// failed call must be MPI_ERR_OTHER with the shim's reason printed by the same rank, and the
// run must end (mpirun exit 0) before its deadline.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/process.h"
#include "tests/soak/soak_figures.h"

namespace ohio::soak {

struct MpiJobSpec {
  std::string name;
  std::vector<uint32_t> nodes;  // cluster nodes, `ppn` ranks on each
  uint32_t ppn = 0;
  uint64_t max_bytes = 0;       // bytes per rank of a call, at most
  uint32_t calls_per_run = 0;
};

class MpiSoakJob {
 public:
  MpiSoakJob(MpiJobSpec spec, testing::Cluster& cluster, const testing::TempDir& dir, uint64_t seed, uint64_t calls);
  ~MpiSoakJob();

  // As SoakJob::Step: judges a run that has ended (one past `run_deadline` is stopped and
  // reported), and starts the next while calls remain and every node of the job is up.
  void Step(std::chrono::milliseconds run_deadline, bool launch, Figures* f);
  bool done() const { return !run_ && calls_made_ >= calls_; }
  bool Spans(uint32_t node) const;

 private:
  void Launch();
  void Judge(int exit_code, Figures* f);

  MpiJobSpec spec_;
  testing::Cluster& cluster_;
  const testing::TempDir& dir_;
  uint64_t seed_;
  uint64_t calls_;
  uint64_t calls_made_ = 0;  // by the runs judged
  uint32_t generation_ = 0;
  std::unique_ptr<testing::Process> run_;
  std::chrono::steady_clock::time_point run_started_;
};

}  // namespace ohio::soak
