// MPI_Ialltoall completed by MPI_Wait while ohiod is stopped (SIGSTOP), under real mpirun
// (tests/mpi/daemon/stopped_daemon_check.c): on one node, through the shim (Open MPI and MPICH) and
// through Open MPI's component coll/ohio, the wait returns an error within the group's timeout
// (plus 1 s of slack for a loaded machine) on every rank, naming the stopped daemon, where it
// used to wait for as long as the daemon stayed stopped. Across hosts: tests/mpi/netns/netns_stopped_daemon_test.sh.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <string>

#include "tests/harness/daemon_fixture.h"
#include "tests/harness/process.h"
#include "tests/harness/stopped_process.h"
#include "tests/mpi/mpi_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(120);
constexpr int kTimeoutMs = 3000;
constexpr int kRanks = 4;

void ExpectWaitEndsAtTheTimeout(const Mpi& mpi, Binding binding) {
  TempDir dir;
  Daemon daemon(dir, {"--timeout-ms", std::to_string(kTimeoutMs)});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const std::string go = dir.file("go");
  Process job(MpiRun(mpi, kRanks, {daemon.socket()}, kRanks,
                     {{"CHECK_GO_FILE", go}, {"OHIO_IALLTOALL_MIN_BYTES", "0"}, kServeEveryCall},
                     "daemon/stopped_daemon_check", {"4096"}, binding),
              dir.file("mpirun.out"));
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(job.WaitForOutput("rank " + std::to_string(r) + ": holding", kDeadline)) << job.Output();
  }
  StoppedForScope stopped(daemon.pid());
  ASSERT_TRUE(stopped.stopped());
  std::ofstream(go) << "go\n";
  // Every rank's wait ends; the job itself then ends (MPI_Finalize leaves the group at once:
  // libohio gave the stopped daemon up).
  EXPECT_EQ(job.Wait(kDeadline), 0) << job.Output();
  const std::string out = job.Output();
  const std::string why = "ohiod did not complete the nonblocking alltoall within " + std::to_string(kTimeoutMs) +
                          " ms; ohiod (pid " + std::to_string(daemon.pid()) + ") is stopped";
  EXPECT_NE(out.find("ohio: MPI_Ialltoall failed: the ohio group failed (" + why), std::string::npos) << out;
  for (int r = 0; r < kRanks; ++r) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(
        out, m, std::regex("rank " + std::to_string(r) + R"(: ialltoall rc=0 wait rc=(\d+) after (\d+) ms)")))
        << out;
    // MPI_ERR_OTHER (Open MPI 16, MPICH 15), not success.
    EXPECT_NE(std::stoi(m[1]), 0) << out;
    EXPECT_GE(std::stol(m[2]), kTimeoutMs) << out;
    EXPECT_LE(std::stol(m[2]), kTimeoutMs + 1000) << out;
    std::printf("%s: %s\n", mpi.name, m[0].str().c_str());
  }
}

class StoppedDaemon : public ::testing::TestWithParam<Mpi> {};

TEST_P(StoppedDaemon, MpiWaitThroughTheShimEndsAtTheTimeout) { ExpectWaitEndsAtTheTimeout(GetParam(), Binding::kShim); }

INSTANTIATE_TEST_SUITE_P(Launchers, StoppedDaemon, ::testing::Values(kOpenMpi, kMpich),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(StoppedDaemonThroughTheComponent, MpiWaitEndsAtTheTimeout) {
  ExpectWaitEndsAtTheTimeout(kOpenMpi, Binding::kComponent);
}

}  // namespace
}  // namespace ohio::testing
