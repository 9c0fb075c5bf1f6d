// A Python MPI program, unmodified: Debian's mpi4py (linked to Open MPI) under real mpirun,
// tests/mpi/mpi4py_check.py calling Alltoall, Ialltoall, Alltoallv and Alltoallw on byte buffers
// and Alltoall on doubles, every byte checked by the program, on one node and on two emulated
// nodes. Every call is served by ohio, none falls through.
#include <gtest/gtest.h>

#include "tests/harness/cluster.h"
#include "tests/harness/process.h"
#include "tests/mpi/mpi_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(120);
constexpr int kRanks = 4;
constexpr int kIterations = 3;

void RunAndExpectEveryCallServed(const TempDir& dir, const std::vector<std::string>& sockets, int ppn,
                                 const std::string& bytes) {
  // Ialltoall is served from OHIO_IALLTOALL_MIN_BYTES bytes per rank: every one here.
  Process run(MpiRunPath(kOpenMpi, kRanks, sockets, ppn, {{"OHIO_IALLTOALL_MIN_BYTES", "1"}}, "/usr/bin/python3",
                         {RunfilePath("tests/mpi/mpi4py_check.py"), bytes, std::to_string(kIterations)}),
              dir.file("mpirun-" + std::to_string(sockets.size()) + "-" + bytes + ".out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output();
  const std::string out = run.Output();
  ExpectAllOk(out, kRanks);
  EXPECT_EQ(Stats(out, "MPI_Alltoall"), std::make_pair(long{(kIterations + 1) * kRanks}, 0L)) << out;
  for (const char* f : {"MPI_Ialltoall", "MPI_Alltoallv", "MPI_Alltoallw"}) {
    EXPECT_EQ(Stats(out, f), std::make_pair(long{kIterations * kRanks}, 0L)) << f << "\n" << out;
  }
}

TEST(Mpi4py, EveryCallServedOnOneNodeAndAcrossTwo) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  for (const std::string bytes : {"64", "16384"}) {
    SCOPED_TRACE(bytes + " bytes per rank");
    RunAndExpectEveryCallServed(dir, {cluster.node(0).socket()}, kRanks, bytes);
    RunAndExpectEveryCallServed(dir, {cluster.node(0).socket(), cluster.node(1).socket()}, kRanks / 2, bytes);
  }
  EXPECT_NE(cluster.node(1).Log().find("created for"), std::string::npos) << "node 1 served none\n" << cluster.Logs();
}

}  // namespace
}  // namespace ohio::testing
