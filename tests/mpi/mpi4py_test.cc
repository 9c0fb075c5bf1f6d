// A Python MPI program, unmodified: Debian's mpi4py (linked to Open MPI) under real mpirun,
// tests/mpi/mpi4py_check.py calling Alltoall, Ialltoall, Alltoallv and Alltoallw on byte buffers
// and Alltoall on doubles, every byte checked by the program, on one node and on two emulated
// nodes, through the preloaded shim and through Open MPI's collective component. Every call is
// served by ohio, none falls through.
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
                                 const std::string& bytes, Binding binding) {
  // Ialltoall is served from OHIO_IALLTOALL_MIN_BYTES bytes per rank: every one here; the
  // others whatever the selection table would choose. mpi4py initialises MPI_THREAD_MULTIPLE;
  // the program calls from one thread.
  Process run(MpiRunPath(kOpenMpi, kRanks, sockets, ppn,
                         {{"OHIO_IALLTOALL_MIN_BYTES", "1"}, {"OHIO_SERVE_THREAD_MULTIPLE", "1"}, kServeEveryCall},
                         "/usr/bin/python3",
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
}

TEST(Mpi4py, EveryCallServedOnOneNodeAndAcrossTwo) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  for (const Binding binding : {Binding::kShim, Binding::kComponent}) {
    for (const std::string bytes : {"64", "16384"}) {
      SCOPED_TRACE(bytes + " bytes per rank, " + (binding == Binding::kShim ? "shim" : "component"));
      RunAndExpectEveryCallServed(dir, {cluster.node(0).socket()}, kRanks, bytes, binding);
      RunAndExpectEveryCallServed(dir, {cluster.node(0).socket(), cluster.node(1).socket()}, kRanks / 2, bytes,
                                  binding);
    }
  }
  EXPECT_NE(cluster.node(1).Log().find("created for"), std::string::npos) << "node 1 served none\n" << cluster.Logs();
}

// Without OHIO_SERVE_THREAD_MULTIPLE, a job at MPI_THREAD_MULTIPLE (mpi4py's default) is left to
// the library, its data right: the shim counts every call as fallen through, with the reason;
// the component does not take the job, and no daemon sees a group.
TEST(Mpi4py, AThreadMultipleJobGoesToTheLibraryUnlessTheProgramCallsFromOneThread) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::vector<std::string> sockets = {cluster.node(0).socket(), cluster.node(1).socket()};
  for (const Binding binding : {Binding::kShim, Binding::kComponent}) {
    SCOPED_TRACE(binding == Binding::kShim ? "shim" : "component");
    Process run(MpiRunPath(kOpenMpi, kRanks, sockets, kRanks / 2, {{"OHIO_IALLTOALL_MIN_BYTES", "1"}, kServeEveryCall},
                           "/usr/bin/python3", {RunfilePath("tests/mpi/mpi4py_check.py"), "64", "1"}, binding),
                dir.file("mpirun-threads-" + std::to_string(static_cast<int>(binding)) + ".out"));
    ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output();
    const std::string out = run.Output();
    ExpectAllOk(out, kRanks);
    if (binding == Binding::kShim) {
      EXPECT_EQ(Stats(out, "MPI_Alltoall"), std::make_pair(0L, 2L * kRanks)) << out;
      EXPECT_NE(out.find("the job runs with MPI_THREAD_MULTIPLE and ohio serves one thread at a time"),
                std::string::npos)
          << out;
    } else {
      EXPECT_EQ(Stats(out, "MPI_Alltoall"), std::make_pair(-1L, -1L)) << "the component served\n" << out;
    }
  }
  for (uint32_t n = 0; n < 2; ++n) {
    EXPECT_EQ(cluster.node(n).Log().find("created for"), std::string::npos) << cluster.Logs();
  }
}

}  // namespace
}  // namespace ohio::testing
