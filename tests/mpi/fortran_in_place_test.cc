// In-place calls whose ignored send-side arrays end at a guard page (tests/mpi/
// fortran_in_place_check.F90 for every Fortran binding, tests/mpi/alltoallw_in_place_check.c for
// C) under real mpirun with libohio_mpi preloaded against real daemons, under both MPIs, on one
// node and across two. MPI leaves sendcounts, sdispls and sendtypes undefined for MPI_IN_PLACE,
// so the shim must read none of them: one read past the guard kills the rank. Every element the
// programs receive is checked, and every call is served by ohiod (counted by the ranks,
// OHIO_STATS, and by every node's daemon, its admin counters).
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
  const char* language;  // the Fortran binding (mpif_h, use_mpi, use_mpi_f08), or c
  uint32_t nodes;
  int ppn;
};

// Both MPIs, every Fortran binding and C, 4 ranks on one node and 2 on each of two.
std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (const Mpi& mpi : {kOpenMpi, kMpich}) {
    for (const char* language : {"mpif_h", "use_mpi", "use_mpi_f08", "c"}) {
      cases.push_back({mpi, language, 1, 4});
      cases.push_back({mpi, language, 2, 2});
    }
  }
  return cases;
}

class InPlaceGuarded : public ::testing::TestWithParam<Case> {};

TEST_P(InPlaceGuarded, ServedWithoutReadingTheIgnoredArrays) {
  const auto [mpi, language, nodes, ppn] = GetParam();
  const bool fortran = std::string(language) != "c";
  const int ranks = static_cast<int>(nodes) * ppn;
  TempDir dir;
  Cluster cluster(dir, nodes);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::string program =
      fortran ? std::string("fortran_in_place_check_") + language : std::string("alltoallw_in_place_check");
  Process run(MpiRun(mpi, ranks, ControlSockets(cluster), ppn, {kNonblockingAll, kServeEveryCall}, program,
                     {std::to_string(kIterations)}),
              dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << cluster.Logs();
  const std::string out = run.Output();
  ExpectAllOk(out, ranks);
  // Per rank and iteration one call of each function; the C program makes no MPI_Alltoall or
  // MPI_Ialltoall.
  const long calls = static_cast<long>(kIterations) * ranks;
  EXPECT_EQ(Stats(out, "MPI_Alltoallw"), std::make_pair(calls, 0L)) << out;
  EXPECT_EQ(Stats(out, "MPI_Alltoallv"), std::make_pair(calls, 0L)) << out;
  EXPECT_EQ(Stats(out, "MPI_Ialltoallv"), std::make_pair(calls, 0L)) << out;
  const long blocks = fortran ? calls : 0;
  EXPECT_EQ(Stats(out, "MPI_Alltoall"), std::make_pair(blocks, 0L)) << out;
  EXPECT_EQ(Stats(out, "MPI_Ialltoall"), std::make_pair(blocks, 0L)) << out;
  // Every node's ohiod counted each of the group's calls once: 5 per iteration in Fortran, 3 in C.
  const uint64_t group_calls = static_cast<uint64_t>(kIterations) * (fortran ? 5 : 3);
  for (uint32_t n = 0; n < nodes; ++n) {
    EXPECT_EQ(QueryCounters(cluster.node(n).admin_socket()).collectives_served(), group_calls) << "node " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Programs, InPlaceGuarded, ::testing::ValuesIn(Cases()), [](const auto& info) {
  const Case& c = info.param;
  return std::string(c.mpi.name) + "_" + c.language + "_" + std::to_string(c.nodes) + "nodes";
});

}  // namespace
}  // namespace ohio::testing
