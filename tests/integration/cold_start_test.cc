// A group's first round on daemons that are slow to set it up (a failure once seen: 32
// fresh daemons whose first job failed because one of them was still connecting to the others
// when the others' first round timed out). A node's first round, and its timer, begins only
// once every node of the group has its side open (every node answered it, its data connections
// are up), so the timeout measures the collective, not the start-up.
#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/rank_job.h"

namespace ohio::testing {
namespace {

using std::chrono::seconds;

constexpr auto kDeadline = seconds(120);

// n1's daemon is busy setting up three groups with n2, whose daemon hangs (SIGSTOP: its peer
// service takes connections and never answers, so every call to it waits out its deadline).
// A job of n0 and n1 then starts: n1 answers n0 at once (its peer service is not held up) but
// takes a while to open its own side. n0 has a short timeout (1500 ms): before, n0 began its
// first round as soon as n1 had answered, and it failed waiting for n1's ranks, as node4 did
// for node31; now n0 waits for n1's side to open, and every byte arrives.
TEST(ColdStart, FirstRoundWaitsForASlowNodesSideOfTheGroup) {
  TempDir dir;
  Cluster cluster(dir, 3, {"--timeout-ms", "60000"});
  cluster.AddFlags(0, {"--timeout-ms", "1500"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  ASSERT_EQ(kill(cluster.node(2).pid(), SIGSTOP), 0);
  // Continued however the test ends, so that it can be stopped.
  struct Continue {
    pid_t pid;
    ~Continue() { kill(pid, SIGCONT); }
  } resume{cluster.node(2).pid()};
  std::vector<std::unique_ptr<Process>> stuck;
  for (int g = 0; g < 3; ++g) {
    stuck.push_back(std::make_unique<Process>(
        std::vector<std::string>{RunfilePath("tests/tools/alltoall_rank"), "--socket", cluster.node(1).socket(), "--key",
                                 KeyHex("stuck-with-n2-" + std::to_string(g)), "--size", "2", "--rank", "0", "--nodes",
                                 "n1", "n2", "--rank-node", "0", "1", "--stall"},
        dir.file("stuck" + std::to_string(g) + ".out")));
    ASSERT_TRUE(stuck.back()->WaitForOutput("joined", kDeadline)) << stuck.back()->Output();
  }
  RankJob job(dir, {cluster.node(0).socket(), cluster.node(1).socket()}, {"n0", "n1"}, ConsecutivePlacement(2, 1),
              "slow-side", {"--bytes", "4096", "65536", "--iterations", "3"});
  const std::vector<int> codes = job.Wait(kDeadline);
  for (int code : codes) EXPECT_EQ(code, 0) << job.Outputs() << cluster.Logs();
  for (auto& p : stuck) p->Signal(SIGKILL);
}

}  // namespace
}  // namespace ohio::testing
