// MPI_Alltoallw of an unmodified program (tests/mpi/alltoallw_check.c) under real mpirun, Open MPI
// and MPICH, with libohio_mpi preloaded against real daemons: per-pair datatypes (vector,
// subarray, contiguous, resized), zero counts, in place, every byte checked by the program; the
// shim's statistics say who served each call, and a type it cannot flatten on one rank only
// sends every rank to the MPI library together.
#include <gtest/gtest.h>

#include "tests/harness/cluster.h"
#include "tests/harness/process.h"
#include "tests/mpi/mpi_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(120);
constexpr const char* kCheck = "alltoallw_check";
constexpr int kIterations = 4;
// Per rank: three calls per iteration (mixed types, contiguous types, in place).
constexpr int kTypedCalls = 3 * kIterations;

class MpiAlltoallw : public ::testing::TestWithParam<Mpi> {};

TEST_P(MpiAlltoallw, OneNodeServedWithVerifiedData) {
  const Mpi mpi = GetParam();
  constexpr int kRanks = 4;
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  Process run(MpiRun(mpi, kRanks, {daemon.socket()}, kRanks, {}, kCheck, {std::to_string(kIterations), "mismatch"}),
              dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << daemon.Log();
  const std::string out = run.Output();
  ExpectAllOk(out, kRanks);
  // The typed calls and the one after the mismatch are served; the darray call falls through
  // on every rank; the mismatch is an error on every rank, neither served nor fallen through.
  const auto [served, fell] = Stats(out, "MPI_Alltoallw");
  EXPECT_EQ(served, (kTypedCalls + 1) * kRanks) << out;
  EXPECT_EQ(fell, kRanks) << out;
  EXPECT_NE(out.find("MPI_Alltoallw: 1 fell through: a datatype built in a way ohio does not serve (darray, "
                     "Fortran or deprecated)"),
            std::string::npos)
      << out;
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_NE(out.find("rank " + std::to_string(r) + ": mismatch: error class MPI_ERR_COUNT"), std::string::npos)
        << out;
  }
  EXPECT_NE(out.find("ohio: MPI_Alltoallw failed: rank 0 sends 12 bytes to rank 1, which expects 8 from it"),
            std::string::npos)
      << out;
  EXPECT_EQ(Stats(out, "MPI_Alltoall"), std::make_pair(0L, 0L)) << out;
}

// Across nodes ohio_alltoallv is not served yet: every call falls through on every rank, alike,
// with correct data, and says why.
TEST_P(MpiAlltoallw, AcrossNodesFallsThroughAlike) {
  const Mpi mpi = GetParam();
  constexpr uint32_t kNodes = 2;
  constexpr int kPpn = 2, kRanks = kNodes * kPpn;
  TempDir dir;
  Cluster cluster(dir, kNodes);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  Process run(MpiRun(mpi, kRanks, {cluster.node(0).socket(), cluster.node(1).socket()}, kPpn, {}, kCheck,
                     {std::to_string(kIterations)}),
              dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << cluster.Logs();
  const std::string out = run.Output();
  ExpectAllOk(out, kRanks);
  const auto [served, fell] = Stats(out, "MPI_Alltoallw");
  EXPECT_EQ(served, 0) << out;
  EXPECT_EQ(fell, (kTypedCalls + 1) * kRanks) << out;
  EXPECT_NE(out.find("MPI_Alltoallw: " + std::to_string(kTypedCalls + 1) +
                     " fell through: MPI_Alltoallw is served on one node; this communicator spans 2 nodes"),
            std::string::npos)
      << out;
}

INSTANTIATE_TEST_SUITE_P(Launchers, MpiAlltoallw, ::testing::Values(kOpenMpi, kMpich),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ohio::testing
