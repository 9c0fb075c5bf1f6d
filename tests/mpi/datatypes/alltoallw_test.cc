// MPI_Alltoallw of an unmodified program (tests/mpi/alltoallw_check.c) under real mpirun, Open MPI
// and MPICH, with libohio_mpi preloaded against real daemons: per-pair datatypes (vector,
// subarray, contiguous, resized), zero counts, in place, every byte checked by the program; the
// shim's statistics say who served each call, and a type it cannot flatten on one rank only
// sends every rank to the MPI library together. On one node and across two.
#include <gtest/gtest.h>

#include "tests/harness/cluster.h"
#include "tests/harness/process.h"
#include "tests/mpi/mpi_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(120);
constexpr const char* kCheck = "alltoallw_check";
constexpr int kIterations = 4;

struct Topology {
  uint32_t nodes;
  int ppn;
  const char* mismatch;  // what every rank prints of the call whose counts disagree
};
// On one node the ranks read each other's count tables and name the pair; across nodes the
// daemons exchange the tables once the digest has failed (docs/ARCHITECTURE.md) and name the
// same pair with the same text.
const Topology kOneNode = {1, 4, "rank 0 sends 12 bytes to rank 1, which expects 8 from it"};
const Topology kTwoNodes = {2, 2, "rank 0 sends 12 bytes to rank 1, which expects 8 from it"};

class MpiAlltoallw : public ::testing::TestWithParam<std::tuple<Mpi, Topology>> {};

TEST_P(MpiAlltoallw, ServedWithVerifiedData) {
  const auto [mpi, topo] = GetParam();
  const int ranks = static_cast<int>(topo.nodes) * topo.ppn;
  TempDir dir;
  Cluster cluster(dir, topo.nodes);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // How ohio serves each datatype, whatever the selection table would choose.
  Process run(MpiRun(mpi, ranks, ControlSockets(cluster), topo.ppn, {kServeEveryCall}, kCheck,
                     {std::to_string(kIterations), "mismatch"}),
              dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << cluster.Logs();
  const std::string out = run.Output();
  ExpectAllOk(out, ranks);
  // The typed calls and the one after the mismatch are served; the darray call is handed back
  // on every rank; the mismatch is an error on every rank, neither served nor handed back.
  ExpectAlltoallwCheckServed(out, ranks, kIterations);
  EXPECT_NE(out.find(std::string("ohio: MPI_Alltoallw failed: ") + topo.mismatch), std::string::npos) << out;
  EXPECT_EQ(Stats(out, "MPI_Alltoall"), std::make_pair(0L, 0L)) << out;
}

INSTANTIATE_TEST_SUITE_P(
    Launchers, MpiAlltoallw,
    ::testing::Combine(::testing::Values(kOpenMpi, kMpich), ::testing::Values(kOneNode, kTwoNodes)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).name) + "_" + std::to_string(std::get<1>(info.param).nodes) + "nodes";
    });

}  // namespace
}  // namespace ohio::testing
