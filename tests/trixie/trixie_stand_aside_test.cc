// Debian 13's Open MPI 5.0 through coll/ohio where no node of the job has an ohiod: the component
// learns it from Open MPI 5's modex (each process posts whether its node's socket is there when
// the component opens, before MPI_Init's PMIx fence) and gives no communicator a module, so the
// job runs through Open MPI's own components with no set-up of ohio's. The same job where one of
// its two nodes has an ohiod keeps its modules on both (every rank decides alike, none waits in
// a set-up the other skipped: the communicators spanning both hand their calls back), and where
// its node has one is served: standing aside is not what every job does.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/trixie/root_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(240);
constexpr int kRanks = 2;
const std::vector<std::string> kArgs = {"4096", "2"};
constexpr char kStoodAside[] =
    "ohio: no node of this job has an ohiod: coll/ohio left every communicator to the other collective components";

// How many times `needle` occurs in `haystack`.
size_t Occurrences(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + needle.size())) ++n;
  return n;
}

class TrixieStandAside : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(work_.Build("mpicc.openmpi", "alltoall_check.c", "alltoall_check_openmpi5")); }
  // The job's output, after it exited 0: kRanks ranks, `ppn` per node in the order of
  // `sockets`, through the component, ohio serving every call it can.
  std::string Run(const std::vector<std::string>& sockets, int ppn) {
    Process run(work_.MpiRun(kTrixieOpenMpi, kRanks, sockets, ppn, {kServeEveryCall},
                             dir_.file("alltoall_check_openmpi5"), kArgs, Binding::kComponent),
                dir_.file("mpirun.out"));
    EXPECT_EQ(run.Wait(kDeadline), 0) << run.Output();
    return run.Output();
  }
  std::string NoDaemonSocket() const { return dir_.file("no-ohiod.sock"); }

  TempDir dir_;
  RootWork work_{dir_};
};

TEST_F(TrixieStandAside, NoNodeHasAnOhiodSoNoCommunicatorGetsAModule) {
  const std::string out = Run({NoDaemonSocket()}, kRanks);
  ExpectAllOk(out, kRanks);
  // Said once, by the job's first process.
  EXPECT_EQ(Occurrences(out, kStoodAside), 1u) << out;
  // No module: nothing counted, so no OHIO_STATS report at all, and no set-up that found no
  // daemon and handed its calls back.
  EXPECT_EQ(Stats(out), std::make_pair(-1L, -1L)) << out;
  EXPECT_EQ(Stats(out, "MPI_Alltoallv"), std::make_pair(-1L, -1L)) << out;
  EXPECT_EQ(out.find("ohio: served through"), std::string::npos) << out;
  EXPECT_EQ(out.find("handed back"), std::string::npos) << out;
  EXPECT_EQ(out.find("cannot connect"), std::string::npos) << out;
}

TEST_F(TrixieStandAside, OneNodeOfTwoHasAnOhiodSoBothKeepTheirModules) {
  Cluster cluster(dir_, 1);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::string out = Run({cluster.node(0).socket(), NoDaemonSocket()}, 1);
  ExpectAllOk(out, kRanks);
  EXPECT_EQ(out.find(kStoodAside), std::string::npos) << out;
  // Both ranks kept their modules: every MPI_Alltoallv of both (22 each) was counted by one,
  // and rank 0 hands the communicators spanning both back for rank 1. The calls served are
  // those of communicators of rank 0 alone, whose node has the daemon. (The warnings the two
  // ranks print at once may interleave mid-line: the assertions read only rank 0's report.)
  const auto [served, handed_back] = Stats(out);
  const auto [served_v, handed_back_v] = Stats(out, "MPI_Alltoallv");
  EXPECT_EQ(served_v + handed_back_v, 22L * kRanks) << out;
  EXPECT_GT(handed_back, 0) << out;
  EXPECT_NE(out.find(" handed back: another rank of the communicator cannot use ohio"), std::string::npos) << out;
  EXPECT_EQ(QueryCounters(cluster.node(0).admin_socket()).collectives_served(),
            static_cast<uint64_t>(served + served_v))
      << out;
}

TEST_F(TrixieStandAside, WithAnOhiodTheSameJobIsServed) {
  Cluster cluster(dir_, 1);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::string out = Run({cluster.node(0).socket()}, kRanks);
  ExpectAllOk(out, kRanks);
  EXPECT_EQ(out.find(kStoodAside), std::string::npos) << out;
  EXPECT_NE(out.find("ohio: served through Open MPI's collective component coll/ohio"), std::string::npos) << out;
  const long served = ExpectAlltoallCheckServed(out, kRanks);
  EXPECT_GE(QueryCounters(cluster.node(0).admin_socket()).collectives_served(),
            static_cast<uint64_t>(served / kRanks + 22))
      << out;
}

}  // namespace
}  // namespace ohio::testing
