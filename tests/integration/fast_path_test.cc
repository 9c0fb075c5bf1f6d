// The fast path, counted: what a small alltoall costs in frames, control frames and daemon
// wake-ups (through the admin API, so the counts are exact whatever the scheduler does), and
// the errors of eager rounds: sizes that differ across nodes (also across the eager/announced
// boundary), an opt-out, a peer's next round arriving early, a rank killed on one node.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/rank_job.h"

namespace ohio::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kDeadline = seconds(120);

bool Contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

std::vector<std::string> Stalling(uint32_t) { return {"--stall-after"}; }

TEST(FastPath, OneNodeCallsNeitherWakeTheDaemonNorSendFrames) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const admin::CountersReply before = QueryCounters(daemon.admin_socket());
  constexpr uint32_t kCalls = 3000;
  RankJob job(dir, daemon.socket(), "quiet", 4, {"--bytes", "64", "--iterations", std::to_string(kCalls)}, Stalling);
  for (uint32_t r = 0; r < 4; ++r) ASSERT_TRUE(job.rank(r).WaitForOutput("stalling", kDeadline)) << job.Outputs();
  const admin::CountersReply after = QueryCounters(daemon.admin_socket());
  // Every call counted (by rank 0 in the segment, folded by the daemon when asked)...
  EXPECT_EQ(after.collectives_served() - before.collectives_served(), kCalls);
  EXPECT_EQ(after.bytes_local() - before.bytes_local(), uint64_t{kCalls} * 4 * 4 * 64);
  // ...while the daemon was never woken by the group and nothing went on the wire.
  EXPECT_EQ(after.engine_wakeups(), before.engine_wakeups());
  EXPECT_EQ(after.transport_counters().data_frames_sent(), 0u);
  EXPECT_EQ(after.transport_counters().control_frames_sent(), 0u);
  for (uint32_t r = 0; r < 4; ++r) job.rank(r).Signal(SIGKILL);
  job.Wait(seconds(10));
}

TEST(FastPath, SmallCallAcrossNodesIsOneFramePerPeerAndNoControlFrames) {
  TempDir dir;
  // Three nodes: the default inter-node table runs the hypercube from four (hypercube_test).
  constexpr uint32_t kNodes = 3, kCalls = 300;
  Cluster cluster(dir, kNodes);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  std::vector<admin::CountersReply> before;
  for (uint32_t n = 0; n < kNodes; ++n) before.push_back(QueryCounters(cluster.node(n).admin_socket()));
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(kNodes, 2), "frames",
              {"--bytes", "64", "--iterations", std::to_string(kCalls)}, Stalling);
  for (uint32_t r = 0; r < job.size(); ++r) {
    ASSERT_TRUE(job.rank(r).WaitForOutput("stalling", kDeadline)) << job.Outputs() << cluster.Logs();
  }
  for (uint32_t n = 0; n < kNodes; ++n) {
    const admin::CountersReply now = QueryCounters(cluster.node(n).admin_socket());
    const auto& t = now.transport_counters();
    const auto& t0 = before[n].transport_counters();
    SCOPED_TRACE("node " + cluster.name(n));
    EXPECT_EQ(now.collectives_served() - before[n].collectives_served(), kCalls);
    // One put per other node and call, announcing nothing first.
    EXPECT_EQ(t.data_frames_sent() - t0.data_frames_sent(), uint64_t{kNodes - 1} * kCalls);
    EXPECT_EQ(t.data_frames_received() - t0.data_frames_received(), uint64_t{kNodes - 1} * kCalls);
    EXPECT_EQ(t.control_frames_sent() - t0.control_frames_sent(), 0u);
    EXPECT_EQ(t.control_frames_received() - t0.control_frames_received(), 0u);
    // Payload only: 2 ranks here x 2 there x 64 bytes to each of 2 nodes, both ways.
    EXPECT_EQ(now.bytes_sent() - before[n].bytes_sent(), uint64_t{kCalls} * (kNodes - 1) * 2 * 2 * 64);
  }
  for (uint32_t r = 0; r < job.size(); ++r) job.rank(r).Signal(SIGKILL);
  job.Wait(seconds(10));
}

// Where the ranks share the node's CPUs with the daemon they sleep as soon as they wait, and
// the daemon wakes them once per call: when an eager round's last block is in, not for each
// block (group.h, set_wake_for_each_eager_block), and not when a round finishes unless a rank
// waits for that (RankSlot::awaiting_finished). Eight nodes, one rank each, pairwise: seven
// blocks land per call, one step apart; a wake-up for each that found the rank asleep and one
// for each round's end made 2.7-3.0 wake-ups per call.
TEST(FastPath, RanksSharingTheirCoresAreWokenOncePerCall) {
  TempDir dir;
  constexpr uint32_t kNodes = 8, kCalls = 200;
  Cluster cluster(dir, kNodes);
  // A tenth of a CPU per node: a rank and its daemon are more than 8 per CPU, and the rank
  // sleeps at once when it waits (common/spin_mode.h).
  for (uint32_t n = 0; n < kNodes; ++n) cluster.AddFlags(n, {"--cpus", "0.1"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  std::vector<admin::CountersReply> before;
  for (uint32_t n = 0; n < kNodes; ++n) before.push_back(QueryCounters(cluster.node(n).admin_socket()));
  setenv("OHIO_INTERNODE_ALGORITHM", "pairwise", 1);  // inherited by the rank processes
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(kNodes, 1), "woken",
              {"--bytes", "64", "--iterations", std::to_string(kCalls)}, Stalling);
  unsetenv("OHIO_INTERNODE_ALGORITHM");
  for (uint32_t r = 0; r < job.size(); ++r) {
    ASSERT_TRUE(job.rank(r).WaitForOutput("stalling", kDeadline)) << job.Outputs() << cluster.Logs();
  }
  for (uint32_t n = 0; n < kNodes; ++n) {
    const admin::CountersReply now = QueryCounters(cluster.node(n).admin_socket());
    SCOPED_TRACE("node " + cluster.name(n));
    EXPECT_EQ(now.collectives_served() - before[n].collectives_served(), kCalls);
    EXPECT_EQ(now.transport_counters().data_frames_received() - before[n].transport_counters().data_frames_received(),
              uint64_t{kNodes - 1} * kCalls);
    const uint64_t woken = now.ranks_woken() - before[n].ranks_woken();
    // Measured: 195-201 for 200 calls; 392-397 when the end of each round woke them too, and
    // 536-603 with a wake-up for every block as well.
    EXPECT_LE(woken, kCalls * 13 / 10);
    EXPECT_GE(woken, kCalls / 2) << "the rank hardly ever slept: no test";
  }
  for (uint32_t r = 0; r < job.size(); ++r) job.rank(r).Signal(SIGKILL);
  job.Wait(seconds(10));
}

TEST(FastPath, SizesDifferAcrossTheEagerAnnouncedBoundary) {
  TempDir dir;
  Cluster cluster(dir, 3);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // Nodes n0 and n2 pass 4 MiB (too large for half an SRB: announced rounds), n1 passes 64 B
  // (eager). Every rank gets the error naming both; then the group works at 4 MiB.
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(3, 2), "boundary",
              {"--bytes", "4194304", "--expect", "size mismatch"}, [](uint32_t r) {
                return r / 2 == 1 ? std::vector<std::string>{"--my-bytes", "64"} : std::vector<std::string>{};
              });
  auto codes = job.Wait(kDeadline);
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_EQ(codes[r], 0) << job.Outputs() << cluster.Logs();
    const std::string out = job.rank(r).Output();
    EXPECT_TRUE(Contains(out, "64 on node n1; 4194304 on nodes n0,n2")) << out;
    EXPECT_TRUE(Contains(out, "after mismatch ok")) << out;
  }
}

TEST(FastPath, OptOutOfAnEagerRoundAcrossNodes) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // Rank 3 (on n1) opts out of the 3rd of 6 calls: every rank of both nodes gets 'opted out'
  // for it, and the calls before and after are verified byte for byte.
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 2), "opt-out",
              {"--bytes", "1000", "--iterations", "6"}, [](uint32_t r) {
                return std::vector<std::string>{r == 3 ? "--opt-out-at" : "--opted-out-at", "2"};
              });
  auto codes = job.Wait(kDeadline);
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_EQ(codes[r], 0) << job.Outputs() << cluster.Logs();
    const std::string out = job.rank(r).Output();
    EXPECT_TRUE(Contains(out, "call 2: code=12")) << out;
    EXPECT_TRUE(Contains(out, "a rank on node n1 opted out of this alltoall") ||
                Contains(out, "rank 3 opted out of this alltoall"))
        << out;
    EXPECT_TRUE(Contains(out, "ok bytes=1000 iterations=6")) << out;
  }
}

// The same across nodes for a NULL buffer: rank 2 (on n1) passes one; it gets 'invalid
// argument', every other rank of both nodes 'opted out' at once, and the group goes on.
TEST(FastPath, NullBufferOnOneRankFailsThatCallOnEveryNode) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 2), "null-send",
              {"--bytes", "1000", "--iterations", "4"}, [](uint32_t r) {
                return std::vector<std::string>{r == 2 ? "--null-send-at" : "--opted-out-at", "1"};
              });
  auto codes = job.Wait(kDeadline);
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_EQ(codes[r], 0) << job.Outputs() << cluster.Logs();
    const std::string out = job.rank(r).Output();
    EXPECT_TRUE(Contains(out, r == 2 ? "call 1: code=1 (invalid argument) send and recv must not be NULL"
                                     : "call 1: code=12 (opted out)"))
        << out;
    EXPECT_TRUE(Contains(out, "ok bytes=1000 iterations=4")) << out;
  }
}

TEST(FastPath, NextRoundsBlocksArriveBeforeThisNodesRanksAndCountRight) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // Rank 2 (on n1) sleeps after its first call: n0's ranks and rank 3 go on, so n0's blocks of
  // round 2 land in n1's other SRB half before n1's ranks have all arrived at round 2, and wait
  // there to be published. Every call is verified and counted once on both nodes.
  constexpr uint32_t kCalls = 50;
  std::vector<admin::CountersReply> before = {QueryCounters(cluster.node(0).admin_socket()),
                                              QueryCounters(cluster.node(1).admin_socket())};
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 2), "early",
              {"--bytes", "4096", "--iterations", std::to_string(kCalls), "--stall-after"}, [](uint32_t r) {
                return r == 2 ? std::vector<std::string>{"--pause-after-first-ms", "500"} : std::vector<std::string>{};
              });
  for (uint32_t r = 0; r < job.size(); ++r) {
    ASSERT_TRUE(job.rank(r).WaitForOutput("stalling", kDeadline)) << job.Outputs() << cluster.Logs();
    EXPECT_TRUE(Contains(job.rank(r).Output(), "ok bytes=4096 iterations=50")) << job.rank(r).Output();
  }
  for (uint32_t n = 0; n < 2; ++n) {
    const admin::CountersReply now = QueryCounters(cluster.node(n).admin_socket());
    EXPECT_EQ(now.collectives_served() - before[n].collectives_served(), kCalls) << cluster.name(n);
    EXPECT_EQ(now.collectives_failed() - before[n].collectives_failed(), 0u) << cluster.name(n);
    EXPECT_EQ(now.bytes_received() - before[n].bytes_received(), uint64_t{kCalls} * 2 * 2 * 4096) << cluster.name(n);
    EXPECT_EQ(now.transport_counters().data_frames_received() - before[n].transport_counters().data_frames_received(),
              kCalls)
        << cluster.name(n);
  }
  for (uint32_t r = 0; r < job.size(); ++r) job.rank(r).Signal(SIGKILL);
  job.Wait(seconds(10));
}

TEST(FastPath, OneNodeRankKilledBetweenArrivalAndCopyOut) {
  TempDir dir;
  // The timeout is far away: the death must be noticed from the closed connection.
  Daemon daemon(dir, {"--timeout-ms", "120000"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  // 1 MiB per rank: each call reads the other ranks' buffers in place, and a rank spends most
  // of a call between publishing its buffer and the end of everyone's reading. Rank 3 is
  // stopped mid-loop (the others then wait for it), then killed.
  RankJob job(dir, daemon.socket(), "killed-reading", 4,
              {"--bytes", "1048576", "--iterations", "100000", "--expect", "group failed"});
  for (uint32_t r = 0; r < 4; ++r) ASSERT_TRUE(job.rank(r).WaitForOutput("joined", kDeadline)) << job.Outputs();
  std::this_thread::sleep_for(milliseconds(700));
  job.rank(3).Signal(SIGSTOP);
  std::this_thread::sleep_for(milliseconds(300));
  job.rank(3).Signal(SIGKILL);
  const auto start = std::chrono::steady_clock::now();
  auto codes = job.Wait(seconds(30));
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(20)) << "the others must not wait for the timeout";
  for (uint32_t r = 0; r < 3; ++r) {
    EXPECT_EQ(codes[r], 0) << job.Outputs();
    const std::string out = job.rank(r).Output();
    EXPECT_TRUE(Contains(out, "rank 3 (pid")) << out;
    EXPECT_FALSE(Contains(out, "WRONG")) << out;
  }
  // Other jobs on the node are unaffected.
  RankJob after(dir, daemon.socket(), "after-kill", 3, {"--bytes", "64", "--iterations", "20"});
  for (int c : after.Wait(kDeadline)) EXPECT_EQ(c, 0) << after.Outputs();
  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
}

}  // namespace
}  // namespace ohio::testing
