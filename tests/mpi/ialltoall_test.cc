// MPI_Ialltoall of an unmodified MPI program (tests/mpi/ialltoall_check.c) under real mpirun,
// Open MPI and MPICH, with libohio_mpi preloaded: completed by Waitall and Testany beside Isend
// and Irecv, by Wait out of order with several outstanding, by Test, Request_get_status,
// Waitsome and Testsome, with a strided receive type; Request_free and Cancel refused as the
// standard says. Every byte is checked by the program; OHIO_STATS shows who served the calls.
// On one node ohiod serves every one; across nodes every one falls through to the library
// alike, saying why.
#include <gtest/gtest.h>

#include <string>

#include "tests/harness/cluster.h"
#include "tests/harness/process.h"
#include "tests/mpi/mpi_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(120);
constexpr const char* kCheck = "ialltoall_check";
// Calls per rank of the check program: 4 iterations of part 1, then 1 + 3 + 2 + 2 + 1, and 1 strict.
constexpr int kIterations = 4;
constexpr int kCalls = kIterations + 9;

class MpiIalltoall : public ::testing::TestWithParam<Mpi> {};

TEST_P(MpiIalltoall, ServedOnOneNodeBesideTheLibrarysRequests) {
  const Mpi mpi = GetParam();
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const int ranks = 3;
  Process run(MpiRun(mpi, ranks, {daemon.socket()}, ranks, {}, kCheck,
                     {"4096", std::to_string(kIterations), "2000", "strict"}),
              dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << daemon.Log();
  const std::string out = run.Output();
  ExpectAllOk(out, ranks);
  for (int r = 0; r < ranks; ++r) {
    EXPECT_NE(out.find("rank " + std::to_string(r) + ": ialltoalls=" + std::to_string(kCalls + 1)), std::string::npos)
        << out;
  }
  const auto [served, fell] = Stats(out, "MPI_Ialltoall");
  EXPECT_EQ(served, (kCalls + 1) * ranks) << out;
  EXPECT_EQ(fell, 0) << out;
  // Refusing the free and the cancel said why, on every rank.
  EXPECT_NE(out.find("ohio: MPI_Request_free: the request is a nonblocking collective (MPI_Ialltoall)"),
            std::string::npos)
      << out;
}

TEST_P(MpiIalltoall, AcrossNodesEveryCallFallsThroughAlike) {
  const Mpi mpi = GetParam();
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const int ranks = 4;
  Process run(MpiRun(mpi, ranks, ControlSockets(cluster), 2, {}, kCheck, {"1000", "2", "500"}),
              dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << cluster.Logs();
  const std::string out = run.Output();
  ExpectAllOk(out, ranks);
  const auto [served, fell] = Stats(out, "MPI_Ialltoall");
  EXPECT_EQ(served, 0) << out;
  EXPECT_EQ(fell, (2 + 9) * ranks) << out;
  EXPECT_NE(out.find("MPI_Ialltoall: 11 fell through: nonblocking alltoalls are served for groups on one node; this "
                     "group spans 2 nodes"),
            std::string::npos)
      << out;
}

INSTANTIATE_TEST_SUITE_P(Launchers, MpiIalltoall, ::testing::Values(kOpenMpi, kMpich),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ohio::testing
