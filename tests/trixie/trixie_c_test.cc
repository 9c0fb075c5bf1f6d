// C programs of Debian 13 (trixie), built there against its MPIs, under its mpirun inside the
// Debian 13 root, served by this machine's ohiods on one node and across two: through Open MPI
// 5.0's collective component coll/ohio (built against 5.0's headers) with nothing preloaded, and
// through the LD_PRELOAD shim under MPICH 4.2 (the one shim built on Debian 12; and the Open MPI
// shim, built against 4.1, under 5.0 across two nodes). MPI_Alltoall and
// MPI_Alltoallv (tests/mpi/alltoall_check.c), the persistent MPI_Alltoall_init (MPI 4.0, native
// in both) and MPI_Ialltoall: every byte checked by the program, every call counted served by
// the ranks (OHIO_STATS) and by every node's daemon.
#include <gtest/gtest.h>

#include "tests/harness/cluster.h"
#include "tests/trixie/root_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(240);

struct Case {
  Mpi mpi;
  Binding binding;
  Topology topo;
};

class TrixieC : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    cluster_ = std::make_unique<Cluster>(dir_, GetParam().topo.nodes);
    ASSERT_TRUE(cluster_->Start()) << cluster_->Logs();
  }
  int Ranks() const { return static_cast<int>(GetParam().topo.nodes) * GetParam().topo.ppn; }
  std::string Program(const std::string& name) const { return name + "_" + GetParam().mpi.name; }
  // Builds tests/mpi/<name>.c inside the root with the MPI's mpicc.
  bool Build(const std::string& name) const {
    return work_.Build(std::string("mpicc.") + GetParam().mpi.name, name + ".c", Program(name));
  }
  // The job's output, after it exited 0. ohio serves every call it can, whatever the selection
  // table would hand to the MPI library.
  std::string Run(const std::string& name, const std::vector<std::string>& args,
                  std::vector<std::pair<std::string, std::string>> env = {}) {
    env.push_back(kServeEveryCall);
    const Case& c = GetParam();
    Process run(work_.MpiRun(c.mpi, Ranks(), ControlSockets(*cluster_), c.topo.ppn, env, dir_.file(Program(name)),
                             args, c.binding),
                dir_.file(name + ".out"));
    EXPECT_EQ(run.Wait(kDeadline), 0) << run.Output() << cluster_->Logs();
    return run.Output();
  }
  void ExpectServedThrough(const std::string& out) const {
    const char* expected = GetParam().binding == Binding::kComponent
                               ? "ohio: served through Open MPI's collective component coll/ohio"
                               : "ohio: served through the LD_PRELOAD shim (libohio_mpi)";
    EXPECT_NE(out.find(expected), std::string::npos) << out;
  }
  // What every node's daemon counted (the same on every node: one group spans them).
  uint64_t ServedByEveryDaemon() {
    const uint64_t first = QueryCounters(cluster_->node(0).admin_socket()).collectives_served();
    for (uint32_t n = 1; n < GetParam().topo.nodes; ++n) {
      EXPECT_EQ(QueryCounters(cluster_->node(n).admin_socket()).collectives_served(), first) << "node " << n;
    }
    return first;
  }

  TempDir dir_;
  RootWork work_{dir_};
  std::unique_ptr<Cluster> cluster_;
};

// MPI_Alltoall and MPI_Alltoallv of every size alltoall_check.c tries, all served but the call
// with a pair type on rank 0, which every rank hands to the MPI library, with the reason.
TEST_P(TrixieC, AlltoallAndAlltoallvServed) {
  ASSERT_TRUE(Build("alltoall_check"));
  const int ranks = Ranks();
  const std::string out = Run("alltoall_check", {"65536", "2"});
  ExpectAllOk(out, ranks);
  ExpectServedThrough(out);
  const long served = ExpectAlltoallCheckServed(out, ranks);
  // Every served call of the group reached the daemons (which count a call staged in rounds
  // once per round).
  EXPECT_GE(ServedByEveryDaemon(), static_cast<uint64_t>(served / ranks + 22)) << out;
}

// MPI_Alltoall_init, MPI 4.0's own in Open MPI 5.0 and MPICH 4.2: every Start served, the
// request surviving every Wait and Test as the persistent request it is.
TEST_P(TrixieC, PersistentAlltoallInitServed) {
  if (std::string(GetParam().mpi.name) == "openmpi" && GetParam().binding == Binding::kShim) {
    GTEST_SKIP() << "the shim interposes MPI_Alltoall_init for MPICH only: Open MPI 5's is the component's";
  }
  ASSERT_TRUE(Build("alltoall_init_check"));
  const int ranks = Ranks();
  constexpr int kStarts = 3 + 2 * 2 + 1 + 2 + 2;
  const std::string out = Run("alltoall_init_check", {"300000"}, {kNonblockingAll});
  ExpectAllOk(out, ranks);
  ExpectServedThrough(out);
  for (int r = 0; r < ranks; ++r) {
    EXPECT_NE(out.find("rank " + std::to_string(r) + ": starts=" + std::to_string(kStarts)), std::string::npos)
        << out;
  }
  EXPECT_EQ(Stats(out, "MPI_Alltoall_init"), std::make_pair(long{kStarts} * ranks, 0L)) << out;
  EXPECT_EQ(ServedByEveryDaemon(), static_cast<uint64_t>(kStarts));
}

// MPI_Ialltoall beside the library's own requests, completed by every kind of Wait and Test.
TEST_P(TrixieC, IalltoallServed) {
  ASSERT_TRUE(Build("ialltoall_check"));
  const int ranks = Ranks();
  constexpr long kCalls = 4 + 9;
  const std::string out = Run("ialltoall_check", {"4096", "4", "500"}, {kNonblockingAll});
  ExpectAllOk(out, ranks);
  ExpectServedThrough(out);
  EXPECT_EQ(Stats(out, "MPI_Ialltoall"), std::make_pair(kCalls * ranks, 0L)) << out;
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (const Topology topo : {Topology{1, 4}, Topology{2, 2}}) {
    cases.push_back({kTrixieOpenMpi, Binding::kComponent, topo});
    cases.push_back({kTrixieMpich, Binding::kShim, topo});
  }
  cases.push_back({kTrixieOpenMpi, Binding::kShim, {2, 2}});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Trixie, TrixieC, ::testing::ValuesIn(Cases()), [](const auto& info) {
  const Case& c = info.param;
  return std::string(c.mpi.name) + (c.binding == Binding::kComponent ? "_component_" : "_shim_") +
         std::to_string(c.topo.nodes) + "nodes";
});

}  // namespace
}  // namespace ohio::testing
