// Fortran programs of Debian 13 (tests/mpi/fortran_check.F90, built inside the root with trixie's
// gfortran 14 through each MPI's mpifort, for `use mpi` and `use mpi_f08`), across two nodes:
// under Open MPI 5.0 through its collective component coll/ohio, under MPICH 4.2 through the
// shim's C and Fortran entry points. Every call of the Alltoall family is served (none falls
// through), MPI_Alltoall_init (MPI 4.0, in both) is started and completed through MPI_Start and
// MPI_Wait, and the program checks every element it receives. The served calls are counted by
// the ranks (OHIO_STATS) and by every node's daemon.
#include <gtest/gtest.h>

#include "tests/harness/cluster.h"
#include "tests/trixie/root_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(240);
constexpr int kIterations = 3;
constexpr uint32_t kNodes = 2;
constexpr int kPpn = 2;

struct Case {
  Mpi mpi;
  const char* binding;  // the Fortran one: use_mpi or use_mpi_f08
  const char* define;
  Binding reaches;
};

class TrixieFortran : public ::testing::TestWithParam<Case> {};

TEST_P(TrixieFortran, EveryCallServedWithVerifiedData) {
  const auto [mpi, binding, define, reaches] = GetParam();
  const int ranks = static_cast<int>(kNodes) * kPpn;
  TempDir dir;
  RootWork work(dir);
  const std::string program = std::string("fortran_check_") + binding + "_" + mpi.name;
  std::vector<std::string> flags = {std::string("-D") + define, "-DWITH_ALLTOALL_INIT", "-ffree-line-length-none"};
  // gfortran 10 and later reject `use mpi`'s untyped buffers unless told to allow them.
  if (std::string(binding) == "use_mpi") flags.push_back("-fallow-argument-mismatch");
  ASSERT_TRUE(work.Build(std::string("mpifort.") + mpi.name, "fortran_check.F90", program, flags));
  Cluster cluster(dir, kNodes);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  Process run(work.MpiRun(mpi, ranks, ControlSockets(cluster), kPpn,
                          {{"OHIO_IALLTOALL_MIN_BYTES", "0"}, kServeEveryCall}, dir.file(program),
                          {std::to_string(kIterations)}, reaches),
              dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << cluster.Logs();
  const std::string out = run.Output();
  ExpectAllOk(out, ranks);
  ExpectFortranCheckServed(out, ranks, kIterations, /*alltoall_init=*/true);
  // Every node's ohiod counted each of the group's calls once: 9 per iteration.
  for (uint32_t n = 0; n < kNodes; ++n) {
    EXPECT_EQ(QueryCounters(cluster.node(n).admin_socket()).collectives_served(), uint64_t{kIterations} * 9)
        << "node " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Trixie, TrixieFortran,
    ::testing::Values(Case{kTrixieOpenMpi, "use_mpi", "USE_MPI", Binding::kComponent},
                      Case{kTrixieOpenMpi, "use_mpi_f08", "USE_MPI_F08", Binding::kComponent},
                      Case{kTrixieMpich, "use_mpi", "USE_MPI", Binding::kShim},
                      Case{kTrixieMpich, "use_mpi_f08", "USE_MPI_F08", Binding::kShim}),
    [](const auto& info) { return std::string(info.param.mpi.name) + "_" + info.param.binding; });

}  // namespace
}  // namespace ohio::testing
