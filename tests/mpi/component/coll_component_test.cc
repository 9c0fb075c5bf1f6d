// Open MPI's collective component coll/ohio (client/openmpi_coll/), loaded by real mpirun from
// mca_base_component_path with nothing preloaded, against real daemons: the check programs'
// every byte right and every call counted served (OHIO_STATS, the daemons' counters); what it
// cannot serve (an intercommunicator, a pair type in a blocking call) correct from the component
// below, with the reason; a pair type in a nonblocking call packed by Open MPI and served; a
// Fortran program's calls, which the shim never sees; ompi_info listing it and its parameters;
// `coll ^ohio` leaving it out; and, with the LD_PRELOAD shim preloaded as well, each call served
// once, by the component.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <string>

#include "tests/harness/cluster.h"
#include "tests/harness/process.h"
#include "tests/mpi/mpi_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(180);

int Occurrences(const std::string& out, const std::string& text) {
  int n = 0;
  for (size_t at = out.find(text); at != std::string::npos; at = out.find(text, at + 1)) ++n;
  return n;
}

// One OHIO_STATS report, from the component.
// Open MPI opens every mca_ file of the component's directory: nothing there may fail to open
// ("mca_base_component_repository_open: unable to open ...", once per rank).
void ExpectNoComponentOpenWarning(const std::string& out) {
  EXPECT_EQ(out.find("mca_base_component_repository_open"), std::string::npos) << out;
}

void ExpectReportOfTheComponent(const std::string& out) {
  ExpectNoComponentOpenWarning(out);
  EXPECT_EQ(Occurrences(out, "ohio: served through"), 1) << out;
  EXPECT_NE(out.find("ohio: served through Open MPI's collective component coll/ohio"), std::string::npos) << out;
}

class CollComponent : public ::testing::TestWithParam<Topology> {
 protected:
  void SetUp() override {
    cluster_ = std::make_unique<Cluster>(dir_, GetParam().nodes);
    ASSERT_TRUE(cluster_->Start()) << cluster_->Logs();
  }
  int Ranks() const { return static_cast<int>(GetParam().nodes) * GetParam().ppn; }
  // The job's output, after it exited 0.
  std::string Run(const std::string& program, const std::vector<std::string>& args,
                  const std::vector<std::pair<std::string, std::string>>& env = {},
                  Binding binding = Binding::kComponent) {
    // These tests are about how the component serves calls, not which: ohio serves every call
    // it can, whatever the selection table would hand to the component below, unless a test
    // names OHIO_SELECTION itself.
    std::vector<std::pair<std::string, std::string>> all = env;
    if (std::none_of(env.begin(), env.end(), [](const auto& e) { return e.first == "OHIO_SELECTION"; })) {
      all.push_back(kServeEveryCall);
    }
    // This package's own programs are named with it ("component/intercomm_check"): the output
    // file takes the program's name alone.
    const std::string output = program.substr(program.find_last_of('/') + 1) + ".out";
    Process run(MpiRun(kOpenMpi, Ranks(), ControlSockets(*cluster_), GetParam().ppn, all, program, args, binding),
                dir_.file(output));
    EXPECT_EQ(run.Wait(kDeadline), 0) << run.Output() << cluster_->Logs();
    return run.Output();
  }
  uint64_t ServedByEveryDaemon() {
    const uint64_t first = QueryCounters(cluster_->node(0).admin_socket()).collectives_served();
    for (uint32_t n = 1; n < GetParam().nodes; ++n) {
      EXPECT_EQ(QueryCounters(cluster_->node(n).admin_socket()).collectives_served(), first) << "node " << n;
    }
    return first;
  }

  TempDir dir_;
  std::unique_ptr<Cluster> cluster_;
};

// MPI_Alltoall and MPI_Alltoallv: every call served but the one with a pair type on rank 0,
// which every rank hands to the component below, correct, with the reason.
TEST_P(CollComponent, AlltoallAndAlltoallvServed) {
  const int ranks = Ranks();
  const std::string out = Run("alltoall_check", {"1048576", "4"});
  ExpectAllOk(out, ranks);
  ExpectReportOfTheComponent(out);
  ExpectAlltoallCheckServed(out, ranks);
}

// MPI_Alltoallw with per-pair datatypes; a darray type is handed back; counts that disagree are
// MPI_ERR_COUNT on every rank, through the communicator's error handler by Open MPI.
TEST_P(CollComponent, AlltoallwServed) {
  const int ranks = Ranks();
  constexpr int kIterations = 4;
  const std::string out = Run("alltoallw_check", {std::to_string(kIterations), "mismatch"});
  ExpectAllOk(out, ranks);
  ExpectReportOfTheComponent(out);
  ExpectAlltoallwCheckServed(out, ranks, kIterations);
}

// MPI_Ialltoall beside the library's own requests, completed by every kind of Wait and Test:
// Open MPI's requests of the component's, completed by its progress callback.
TEST_P(CollComponent, IalltoallServed) {
  const int ranks = Ranks();
  const std::string out = Run("ialltoall_check", {"4096", "4", "500"}, {kNonblockingAll});
  ExpectAllOk(out, ranks);
  ExpectReportOfTheComponent(out);
  constexpr long kCalls = 4 + 9;
  EXPECT_EQ(Stats(out, "MPI_Ialltoall"), std::make_pair(kCalls * ranks, 0L)) << out;
}

// MPI_Ialltoall and MPI_Ialltoallv with a pair type ohio has no layout for (MPI_DOUBLE_INT) on
// rank 0 alone, the others a struct type of the same signature: rank 0 has Open MPI pack its
// pairs, and every call is served, every pair and padding byte right.
TEST_P(CollComponent, NonblockingServedWhereOneRanksTypeHasNoLayout) {
  const int ranks = Ranks();
  const std::string out = Run("ialltoall_pair_check", {"300", "rank0"});
  ExpectAllOk(out, ranks);
  ExpectReportOfTheComponent(out);
  EXPECT_EQ(Stats(out, "MPI_Ialltoall"), std::make_pair(4L * ranks, 0L)) << out;
  EXPECT_EQ(Stats(out, "MPI_Ialltoallv"), std::make_pair(1L * ranks, 0L)) << out;
}

// MPI_Ialltoallv likewise; the call whose counts disagree fails on every rank at MPI_Wait.
TEST_P(CollComponent, IalltoallvServed) {
  const int ranks = Ranks();
  const std::string out = Run("ialltoallv_check", {"300", "1", "mismatch"}, {kNonblockingAll});
  ExpectAllOk(out, ranks);
  ExpectReportOfTheComponent(out);
  // 1 + 2 + 1 + 1 + 2 calls, the mismatch and the one after it: all but the mismatch served.
  EXPECT_EQ(Stats(out, "MPI_Ialltoallv"), std::make_pair(8L * ranks, 0L)) << out;
  EXPECT_EQ(Occurrences(out, "ohio: MPI_Ialltoallv failed: "), ranks) << out;
}

// A persistent alltoall (MPIX_Alltoall_init, tests/mpi/alltoall_init_check.c): every Start is
// posted like an MPI_Ialltoall when asked for, else starts the component below's own persistent
// request, alike on every rank; the program's request survives every Wait, Waitall, Waitany,
// Test and Testsome as the persistent request it is, and frees.
TEST_P(CollComponent, PersistentAlltoallStartedThroughOhioWhenAskedAndByTheComponentBelowOtherwise) {
  const int ranks = Ranks();
  const int starts = 3 + 2 * 2 + 1 + 2 + 2;
  for (const bool asked : {true, false}) {
    SCOPED_TRACE(asked ? "asked" : "not asked");
    // Not asked, the selection table decides: it hands 300000 bytes per rank pair back (above
    // what it serves on one node and across nodes).
    std::vector<std::pair<std::string, std::string>> env = {{"OHIO_SELECTION", "table"}};
    if (asked) env.push_back(kNonblockingAll);
    const std::string out = Run("alltoall_init_check", {"300000"}, env);
    ExpectAllOk(out, ranks);
    ExpectReportOfTheComponent(out);
    for (int r = 0; r < ranks; ++r) {
      EXPECT_NE(out.find("rank " + std::to_string(r) + ": starts=" + std::to_string(starts)), std::string::npos) << out;
    }
    EXPECT_EQ(Stats(out, "MPI_Alltoall_init"),
              asked ? std::make_pair(long{starts} * ranks, 0L) : std::make_pair(0L, long{starts} * ranks))
        << out;
    if (!asked) {
      EXPECT_NE(out.find("MPI_Alltoall_init: " + std::to_string(starts) +
                         " handed to the MPI library by the selection table: the selection table hands ialltoall "
                         "on " +
                         (GetParam().nodes == 1 ? std::string("1 node x 4 ranks") : std::string("2 nodes x 2 ranks")) +
                         " (tcp) to the MPI library (no row matches)"),
                std::string::npos)
          << out;
    }
  }
}

// An intercommunicator's calls go to the component below, correct, with the reason.
TEST_P(CollComponent, IntercommunicatorGoesToTheComponentBelow) {
  const int ranks = Ranks();
  const std::string out = Run("component/intercomm_check", {"4096", "3"});
  ExpectAllOk(out, ranks);
  ExpectReportOfTheComponent(out);
  EXPECT_EQ(Stats(out, "MPI_Alltoall"), std::make_pair(0L, 3L * ranks)) << out;
  EXPECT_EQ(Stats(out, "MPI_Ialltoall"), std::make_pair(0L, 3L * ranks)) << out;
  EXPECT_NE(out.find("MPI_Alltoall: 3 handed back: intercommunicators are not served"), std::string::npos) << out;
  EXPECT_EQ(ServedByEveryDaemon(), 0u);
}

// A Fortran program (Open MPI's Fortran binding calls its own PMPI_Alltoall, which ends in the
// component): the component serves every call of it; with the shim preloaded as well (whose
// Fortran entry points would serve it alone, tests/mpi/fortran_test.cc), each call is still
// served once, by the component.
TEST_P(CollComponent, FortranServedByTheComponentOnceWithOrWithoutTheShim) {
  const int ranks = Ranks();
  constexpr long kIterations = 6;
  const std::vector<std::string> args = {"1000", std::to_string(kIterations)};
  const std::string component = Run("component/coll_component_fortran_check", args);
  ExpectAllOk(component, ranks);
  ExpectReportOfTheComponent(component);
  EXPECT_EQ(Stats(component), std::make_pair(kIterations * ranks, 0L)) << component;
  const uint64_t served = ServedByEveryDaemon();
  EXPECT_EQ(served, static_cast<uint64_t>(kIterations));
  const std::string both = Run("component/coll_component_fortran_check", args, {}, Binding::kShimAndComponent);
  ExpectAllOk(both, ranks);
  ExpectReportOfTheComponent(both);
  EXPECT_EQ(Stats(both), std::make_pair(kIterations * ranks, 0L)) << both;
  EXPECT_EQ(ServedByEveryDaemon(), 2 * served) << "a Fortran call served twice, or not at all\n" << both;
}

// The MCA parameters are the OHIO_* settings, and win over the environment: coll_ohio_stats
// prints the report that OHIO_STATS=0 would not, coll_ohio_disable sends every call below.
TEST_P(CollComponent, McaParametersAreTheSettings) {
  const int ranks = Ranks();
  const std::string out =
      Run("alltoall_check", {"65536", "2"},
          {{"OHIO_STATS", "0"}, {"OMPI_MCA_coll_ohio_stats", "1"}, {"OMPI_MCA_coll_ohio_disable", "1"}});
  ExpectAllOk(out, ranks);
  ExpectReportOfTheComponent(out);
  EXPECT_EQ(Stats(out).first, 0) << out;
  EXPECT_GT(Stats(out).second, 0) << out;
  EXPECT_NE(out.find("handed back: disabled by OHIO_DISABLE"), std::string::npos) << out;
  EXPECT_EQ(ServedByEveryDaemon(), 0u);
}

// `--mca coll ^ohio`: Open MPI never opens the component; nothing reaches ohiod.
TEST_P(CollComponent, LeftOutByMcaServesNothing) {
  const int ranks = Ranks();
  const std::string out = Run("alltoall_check", {"65536", "2"}, {{"OMPI_MCA_coll", "^ohio"}});
  ExpectAllOk(out, ranks);
  EXPECT_EQ(Stats(out), std::make_pair(-1L, -1L)) << "no binding of ohio's ran, so no report\n" << out;
  EXPECT_EQ(ServedByEveryDaemon(), 0u);
}

// Shim preloaded and component loaded: the shim passes every call to Open MPI, where the
// component serves it. The same program reaches each daemon as often as through the shim alone
// or the component alone (not twice as often), and one report, the component's, counts it.
TEST_P(CollComponent, WithTheShimPreloadedEachCallServedOnce) {
  const int ranks = Ranks();
  const std::vector<std::string> args = {"65536", "2"};
  uint64_t before = ServedByEveryDaemon();
  const std::string shim = Run("alltoall_check", args, {}, Binding::kShim);
  const uint64_t through_shim = ServedByEveryDaemon() - before;
  before += through_shim;
  const std::string component = Run("alltoall_check", args, {}, Binding::kComponent);
  const uint64_t through_component = ServedByEveryDaemon() - before;
  before += through_component;
  const std::string both = Run("alltoall_check", args, {}, Binding::kShimAndComponent);
  const uint64_t through_both = ServedByEveryDaemon() - before;
  ExpectAllOk(both, ranks);
  EXPECT_NE(shim.find("ohio: served through the LD_PRELOAD shim (libohio_mpi)"), std::string::npos) << shim;
  ExpectReportOfTheComponent(both);
  EXPECT_GT(through_shim, 0u);
  EXPECT_EQ(through_component, through_shim);
  EXPECT_EQ(through_both, through_shim);
  for (const char* function : {"MPI_Alltoall", "MPI_Alltoallv"}) {
    EXPECT_EQ(Stats(both, function), Stats(shim, function)) << function << both << shim;
    EXPECT_EQ(Stats(component, function), Stats(shim, function)) << function << component << shim;
  }
}

INSTANTIATE_TEST_SUITE_P(Topologies, CollComponent, ::testing::Values(Topology{1, 4}, Topology{2, 2}),
                         [](const auto& info) { return std::to_string(info.param.nodes) + "nodes"; });

// ompi_info, pointed at the component, lists it and a parameter for every OHIO_* setting.
TEST(CollComponentInfo, OmpiInfoListsTheComponentAndItsParameters) {
  TempDir dir;
  Process info({"/usr/bin/env", "OMPI_MCA_mca_base_component_path=" + ComponentPath(), "ompi_info", "--param", "coll",
                "ohio", "--level", "9"},
               dir.file("ompi_info.out"));
  ASSERT_EQ(info.Wait(std::chrono::seconds(60)), 0) << info.Output();
  const std::string out = info.Output();
  ExpectNoComponentOpenWarning(out);
  EXPECT_NE(out.find("MCA coll: ohio"), std::string::npos) << out;
  EXPECT_NE(out.find("parameter \"coll_ohio_priority\" (current value: \"95\""), std::string::npos) << out;
  for (const char* setting : {"disable", "stats", "quiet", "socket", "timeout_ms", "selection", "ialltoall_min_bytes",
                              "design", "algorithm", "internode_algorithm", "spin_us", "spin_max_us", "single_copy_bytes",
                              "stage_times"}) {
    std::string variable = setting;
    for (char& c : variable) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_NE(out.find(std::string("parameter \"coll_ohio_") + setting + "\""), std::string::npos) << setting << out;
    EXPECT_NE(out.find("(OHIO_" + variable + ")"), std::string::npos) << variable << out;
  }
}

}  // namespace
}  // namespace ohio::testing
