// Fortran MPI programs (tests/mpi/fortran_check.F90, built for include 'mpif.h', use mpi and
// use mpi_f08) under real mpirun against real daemons, on one node and across two: under MPICH
// with libohio_mpi preloaded, under Open MPI with it preloaded and, without it, through Open
// MPI's collective component coll/ohio: every call of the Alltoall family is served by ohiod
// (none is handed back), the MPI_Ialltoall and MPI_Ialltoallv requests complete through MPI_Wait,
// MPI_Test and MPI_Waitall, MPICH's MPI_Alltoall_init is started and completed through MPI_Start
// and MPI_Wait, and the program checks every element it receives. The served calls are counted
// twice: by the ranks (OHIO_STATS) and by every node's daemon (its admin counters).
#include <gtest/gtest.h>

#include "tests/harness/cluster.h"
#include "tests/harness/process.h"
#include "tests/mpi/mpi_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(120);
constexpr int kIterations = 3;

struct Case {
  Mpi mpi;
  const char* binding;  // the Fortran one: mpif_h, use_mpi, use_mpi_f08
  Topology topo;
  Binding reaches;      // how the calls reach ohio
};

// Every Fortran binding of both MPIs on both topologies, through the shim; Open MPI's through
// its component as well.
std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (const Mpi& mpi : {kOpenMpi, kMpich}) {
    for (const char* binding : {"mpif_h", "use_mpi", "use_mpi_f08"}) {
      for (const Topology topo : {Topology{1, 4}, Topology{2, 2}}) {
        cases.push_back({mpi, binding, topo, Binding::kShim});
        if (std::string(mpi.name) == "openmpi") cases.push_back({mpi, binding, topo, Binding::kComponent});
      }
    }
  }
  return cases;
}

class FortranBindings : public ::testing::TestWithParam<Case> {};

TEST_P(FortranBindings, EveryCallServedWithVerifiedData) {
  const auto [mpi, binding, topo, reaches] = GetParam();
  const int ranks = static_cast<int>(topo.nodes) * topo.ppn;
  TempDir dir;
  Cluster cluster(dir, topo.nodes);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // How each binding reaches ohio, whatever the selection table would choose.
  Process run(MpiRun(mpi, ranks, ControlSockets(cluster), topo.ppn, {kNonblockingAll, kServeEveryCall},
                     std::string("fortran_check_") + binding, {std::to_string(kIterations)}, reaches),
              dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << cluster.Logs();
  const std::string out = run.Output();
  ExpectAllOk(out, ranks);
  // MPI_Alltoall_init where the MPI has it: MPICH 4, not Open MPI 4.1.
  ExpectFortranCheckServed(out, ranks, kIterations, std::string(mpi.name) == "mpich");
  // The daemons' side: every node's ohiod counted each of the group's calls once (7 per
  // iteration, 9 with MPICH's two Starts).
  const uint64_t group_calls = static_cast<uint64_t>(kIterations) * (std::string(mpi.name) == "mpich" ? 9 : 7);
  for (uint32_t n = 0; n < topo.nodes; ++n) {
    EXPECT_EQ(QueryCounters(cluster.node(n).admin_socket()).collectives_served(), group_calls) << "node " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Bindings, FortranBindings, ::testing::ValuesIn(Cases()), [](const auto& info) {
  const Case& c = info.param;
  return std::string(c.mpi.name) + "_" + c.binding + "_" + std::to_string(c.topo.nodes) + "nodes" +
         (c.reaches == Binding::kComponent ? "_component" : "");
});

}  // namespace
}  // namespace ohio::testing
