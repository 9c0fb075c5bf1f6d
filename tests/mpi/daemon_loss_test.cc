// ohiod killed in the middle of 20,000 MPI_Alltoall calls, 200 us apart, under
// MPI_ERRORS_RETURN (tests/mpi/daemon_loss_check.c), 10 times per MPI, at a different call and
// size each time (64 B and 64 KiB per rank, every fifth call in place): no call returns success
// with a wrong byte, every call has the same outcome on every rank, the calls before the kill
// were served by ohiod and the job goes on to the end in the MPI library (client/mpi_shim_state.h:
// the ranks' agreement after a failure).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <thread>

#include "tests/harness/daemon_fixture.h"
#include "tests/harness/process.h"
#include "tests/mpi/mpi_job.h"

namespace ohio::testing {
namespace {

constexpr int kCalls = 20000;
constexpr int kRuns = 10;

class DaemonLoss : public ::testing::TestWithParam<Mpi> {};

TEST_P(DaemonLoss, KilledMidStreamNoWrongByteAndOneOutcomePerCall) {
  const Mpi mpi = GetParam();
  for (int run = 0; run < kRuns; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    TempDir dir;
    Daemon daemon(dir, {"--timeout-ms", "3000"});
    ASSERT_TRUE(daemon.Start()) << daemon.Log();
    const std::string kill_file = dir.file("kill");
    const int kill_at = 1000 + run * 1777;
    const std::string bytes = run % 2 == 0 ? "64" : "65536";
    Process job(MpiRun(mpi, 4, {daemon.socket()}, 4, {{"CHECK_KILL_FILE", kill_file}}, "daemon_loss_check",
                       {std::to_string(kCalls), bytes, std::to_string(kill_at)}),
                dir.file("mpirun.out"));
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < until && !std::ifstream(kill_file).good() && job.Running()) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ASSERT_TRUE(std::ifstream(kill_file).good()) << job.Output();
    daemon.Kill();
    ASSERT_EQ(job.Wait(std::chrono::seconds(300)), 0) << job.Output();
    const std::string out = job.Output();
    std::smatch m;
    ASSERT_TRUE(std::regex_search(out, m,
                                  std::regex(R"(rank 0: calls (\d+) ok (\d+) failed (\d+) differing (\d+) wrong_bytes (\d+))")))
        << out;
    EXPECT_EQ(std::stol(m[1]), kCalls) << out;
    EXPECT_EQ(std::stol(m[5]), 0) << "success with wrong bytes\n" << out;
    EXPECT_EQ(std::stol(m[4]), 0) << "ranks saw different outcomes\n" << out;
    // At most the call the daemon died in (and, where a rank's failure came a call earlier, that
    // one) fails; every other call is right, through ohio before and the library after.
    EXPECT_LE(std::stol(m[3]), 2) << out;
    EXPECT_EQ(std::stol(m[2]) + std::stol(m[3]), kCalls) << out;
    const auto [served, fell] = Stats(out);
    EXPECT_GE(served, 4L * kill_at) << out;
    EXPECT_GT(fell, 0) << out;
  }
}

INSTANTIATE_TEST_SUITE_P(Launchers, DaemonLoss, ::testing::Values(kOpenMpi, kMpich),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ohio::testing
