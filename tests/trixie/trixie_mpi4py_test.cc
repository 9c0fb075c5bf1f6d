// A Python MPI program of Debian 13: trixie's mpi4py (linked to its Open MPI 5.0) running
// tests/mpi/mpi4py_check.py inside the root, its Alltoall, Ialltoall, Alltoallv and Alltoallw on
// byte buffers and Alltoall on doubles checked byte for byte by the program, on one node and
// across two, through Open MPI 5's coll/ohio: every call served, none is handed back. (Debian 13
// builds mpi4py for Open MPI only: MPICH's jobs are the C and Fortran ones.)
//
// mpi4py initialises MPI_THREAD_MULTIPLE, which ohio serves by default: nothing is set for it.
#include <gtest/gtest.h>

#include "tests/harness/cluster.h"
#include "tests/trixie/root_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(240);
constexpr int kRanks = 4;
constexpr int kIterations = 3;

TEST(TrixieMpi4py, EveryCallServedOnOneNodeAndAcrossTwo) {
  TempDir dir;
  RootWork work(dir);
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::vector<std::vector<std::string>> placements = {{cluster.node(0).socket()},
                                                            {cluster.node(0).socket(), cluster.node(1).socket()}};
  for (const auto& sockets : placements) {
    for (const std::string bytes : {"64", "16384"}) {
      SCOPED_TRACE(bytes + " bytes per rank on " + std::to_string(sockets.size()) + " nodes");
      const int ppn = kRanks / static_cast<int>(sockets.size());
      Process run(work.MpiRun(kTrixieOpenMpi, kRanks, sockets, ppn,
                              {{"OHIO_IALLTOALL_MIN_BYTES", "1"}, kServeEveryCall},
                              "/usr/bin/python3",
                              {dir.file("tests/mpi/mpi4py_check.py"), bytes, std::to_string(kIterations)},
                              Binding::kComponent),
                  dir.file("mpirun-" + std::to_string(sockets.size()) + "-" + bytes + ".out"));
      ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << cluster.Logs();
      const std::string out = run.Output();
      ExpectAllOk(out, kRanks);
      EXPECT_NE(out.find("ohio: served through Open MPI's collective component coll/ohio"), std::string::npos) << out;
      EXPECT_EQ(Stats(out, "MPI_Alltoall"), std::make_pair(long{(kIterations + 1) * kRanks}, 0L)) << out;
      for (const char* f : {"MPI_Ialltoall", "MPI_Alltoallv", "MPI_Alltoallw"}) {
        EXPECT_EQ(Stats(out, f), std::make_pair(long{kIterations * kRanks}, 0L)) << f << "\n" << out;
      }
    }
  }
  EXPECT_NE(cluster.node(1).Log().find("created for"), std::string::npos) << "node 1 served none\n" << cluster.Logs();
}

}  // namespace
}  // namespace ohio::testing
