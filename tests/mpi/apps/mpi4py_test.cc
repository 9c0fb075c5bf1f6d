// A Python MPI program, unmodified: Debian's mpi4py (linked to Open MPI) under real mpirun,
// tests/mpi/mpi4py_check.py calling Alltoall, Ialltoall, Alltoallv and Alltoallw on byte buffers
// and Alltoall on doubles, every byte checked by the program, on one node and on two emulated
// nodes, through the preloaded shim and through Open MPI's collective component. mpi4py
// initialises MPI_THREAD_MULTIPLE, which ohio serves by default: every call is served by ohio,
// none is handed back, by OHIO_STATS and by each daemon's own count. mpi4py-fft's pencil
// transform (its transposes are all-to-alls on subcommunicators), forward and back, gives its
// input back and the right zero frequency, served likewise. OHIO_SERVE_THREAD_MULTIPLE=0 leaves
// such a job to the library, saying why.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/process.h"
#include "tests/mpi/mpi_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(120);
constexpr int kRanks = 4;
constexpr int kIterations = 3;
// Debian's python3, where python3-mpi4py and python3-mpi4py-fft are (not a python3 of the
// user's first on PATH).
constexpr const char* kPython = "/usr/bin/python3";

// Every node's ohiod's count of the collectives it served so far.
std::vector<uint64_t> ServedByEachDaemon(Cluster& cluster, size_t nodes) {
  std::vector<uint64_t> served;
  for (uint32_t n = 0; n < nodes; ++n) {
    served.push_back(QueryCounters(cluster.node(n).admin_socket()).collectives_served());
  }
  return served;
}

void RunAndExpectEveryCallServed(Cluster& cluster, const TempDir& dir, size_t nodes, const std::string& bytes,
                                 Binding binding) {
  std::vector<std::string> sockets = ControlSockets(cluster);
  sockets.resize(nodes);
  const int ppn = kRanks / static_cast<int>(nodes);
  const std::vector<uint64_t> before = ServedByEachDaemon(cluster, nodes);
  // Ialltoall is served from OHIO_IALLTOALL_MIN_BYTES bytes per rank: every one here; the
  // others whatever the selection table would choose. mpi4py initialises MPI_THREAD_MULTIPLE,
  // served with no setting asking for it.
  Process run(MpiRunPath(kOpenMpi, kRanks, sockets, ppn, {{"OHIO_IALLTOALL_MIN_BYTES", "1"}, kServeEveryCall},
                         kPython,
                         {RunfilePath("tests/mpi/mpi4py_check.py"), bytes, std::to_string(kIterations)}, binding),
              dir.file("mpirun-" + std::to_string(sockets.size()) + "-" + bytes + "-" +
                       std::to_string(static_cast<int>(binding)) + ".out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output();
  const std::string out = run.Output();
  ExpectAllOk(out, kRanks);
  EXPECT_EQ(Stats(out, "MPI_Alltoall"), std::make_pair(long{(kIterations + 1) * kRanks}, 0L)) << out;
  for (const char* f : {"MPI_Ialltoall", "MPI_Alltoallv", "MPI_Alltoallw"}) {
    EXPECT_EQ(Stats(out, f), std::make_pair(long{kIterations * kRanks}, 0L)) << f << "\n" << out;
  }
  // Each daemon moved every call once for its node: Alltoall (one more, of doubles), Ialltoall,
  // Alltoallv and Alltoallw each iteration.
  const std::vector<uint64_t> after = ServedByEachDaemon(cluster, nodes);
  for (size_t n = 0; n < nodes; ++n) {
    EXPECT_EQ(after[n] - before[n], uint64_t{4 * kIterations + 1}) << "node " << n << "\n" << out;
  }
}

TEST(Mpi4py, EveryCallServedOnOneNodeAndAcrossTwo) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  for (const Binding binding : {Binding::kShim, Binding::kComponent}) {
    for (const std::string bytes : {"64", "16384"}) {
      SCOPED_TRACE(bytes + " bytes per rank, " + (binding == Binding::kShim ? "shim" : "component"));
      RunAndExpectEveryCallServed(cluster, dir, 1, bytes, binding);
      RunAndExpectEveryCallServed(cluster, dir, 2, bytes, binding);
    }
  }
  EXPECT_NE(cluster.node(1).Log().find("created for"), std::string::npos) << "node 1 served none\n" << cluster.Logs();
}

// mpi4py-fft's pencil transform of a 32^3 array on 2 x 2 ranks, forward and back 3 times: the
// program checks the round trip and the zero frequency on every rank; its all-to-alls are
// served (OHIO_STATS: some served, none handed back) and both daemons served them.
TEST(Mpi4py, FftRoundTripServedAcrossTwoNodes) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  for (const Binding binding : {Binding::kShim, Binding::kComponent}) {
    SCOPED_TRACE(binding == Binding::kShim ? "shim" : "component");
    const std::vector<uint64_t> before = ServedByEachDaemon(cluster, 2);
    Process run(MpiRunPath(kOpenMpi, kRanks, ControlSockets(cluster), kRanks / 2, {kServeEveryCall}, kPython,
                           {RunfilePath("tests/mpi/apps/mpi4py_fft_check.py"), "32", "3"}, binding),
                dir.file("mpirun-fft-" + std::to_string(static_cast<int>(binding)) + ".out"));
    ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << cluster.Logs();
    const std::string out = run.Output();
    ExpectAllOk(out, kRanks);
    long served = 0;
    for (const char* f : {"MPI_Alltoall", "MPI_Alltoallv", "MPI_Alltoallw"}) {
      const auto [s, fell] = Stats(out, f);
      EXPECT_EQ(fell, 0) << f << "\n" << out;
      served += s;
    }
    EXPECT_GT(served, 0) << out;
    RecordProperty(binding == Binding::kShim ? "shim_calls_served" : "component_calls_served",
                   std::to_string(served));
    const std::vector<uint64_t> after = ServedByEachDaemon(cluster, 2);
    for (size_t n = 0; n < 2; ++n) EXPECT_GT(after[n], before[n]) << "node " << n << "\n" << out;
  }
}

// OHIO_SERVE_THREAD_MULTIPLE=0 leaves a job at MPI_THREAD_MULTIPLE (mpi4py's default) to the
// library, its data right: the shim counts every call as handed back, with the reason and how
// to have it served; the component does not take the job, and no daemon sees a group.
TEST(Mpi4py, ServeThreadMultipleZeroLeavesTheJobToTheLibrary) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::vector<std::string> sockets = {cluster.node(0).socket(), cluster.node(1).socket()};
  for (const Binding binding : {Binding::kShim, Binding::kComponent}) {
    SCOPED_TRACE(binding == Binding::kShim ? "shim" : "component");
    Process run(MpiRunPath(kOpenMpi, kRanks, sockets, kRanks / 2,
                           {{"OHIO_IALLTOALL_MIN_BYTES", "1"}, {"OHIO_SERVE_THREAD_MULTIPLE", "0"}, kServeEveryCall},
                           kPython, {RunfilePath("tests/mpi/mpi4py_check.py"), "64", "1"}, binding),
                dir.file("mpirun-threads-" + std::to_string(static_cast<int>(binding)) + ".out"));
    ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output();
    const std::string out = run.Output();
    ExpectAllOk(out, kRanks);
    if (binding == Binding::kShim) {
      EXPECT_EQ(Stats(out, "MPI_Alltoall"), std::make_pair(0L, 2L * kRanks)) << out;
      EXPECT_NE(out.find(": 2 handed back: the job runs with MPI_THREAD_MULTIPLE and "
                         "OHIO_SERVE_THREAD_MULTIPLE=0 leaves it to the MPI library (unset it, or set it to 1, to have "
                         "ohio serve it)"),
                std::string::npos)
          << out;
    } else {
      EXPECT_EQ(Stats(out, "MPI_Alltoall"), std::make_pair(-1L, -1L)) << "the component served\n" << out;
    }
  }
  for (uint32_t n = 0; n < 2; ++n) {
    EXPECT_EQ(cluster.node(n).Log().find("created for"), std::string::npos) << cluster.Logs();
    EXPECT_EQ(QueryCounters(cluster.node(n).admin_socket()).collectives_served(), 0u) << "node " << n;
  }
}

}  // namespace
}  // namespace ohio::testing
