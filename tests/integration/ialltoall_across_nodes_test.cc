// ohio_ialltoall across nodes (daemon/offloaded_remote_alltoall.h) with real daemons as 2 and 3
// nodes on loopback and real rank processes: the ranks post several calls and then only watch
// their receive buffers with plain loads (tests/tools/ialltoall_rank.cc) while the daemons copy
// in, exchange and copy out; every byte is checked, and each daemon counts exactly the calls,
// the frames to and from every other node and the bytes. A blocking alltoall between posting
// and completing finds the posted calls complete (MPI's order); large calls go in staged rounds;
// a size that differs across nodes fails that call on every rank of every node and the group
// goes on; a rank that dies, or posts too late, fails every rank's wait instead of hanging it.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <regex>
#include <string>

#include "tests/harness/cluster.h"
#include "tests/harness/rank_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(120);
constexpr const char* kTool = "tests/tools/ialltoall_rank";

RankJob Job(const TempDir& dir, Cluster& cluster, const std::vector<uint32_t>& placement, const std::string& name,
            const std::vector<std::string>& args, std::function<std::vector<std::string>(uint32_t)> per_rank = nullptr) {
  return RankJob(dir, ControlSockets(cluster), NodeNames(cluster), placement, name, args, std::move(per_rank),
                 std::nullopt, kTool);
}

void AllPass(RankJob& job, Cluster& cluster) {
  for (int c : job.Wait(kDeadline)) EXPECT_EQ(c, 0) << job.Outputs() << cluster.Logs();
}

// What every node of an eager-only job must have counted: `calls` alltoalls, one data frame to
// and one from every other node per call and no control frame, and the payload both ways, where
// each rank sent each rank `pair_bytes` over all calls.
void ExpectEagerCounts(Cluster& cluster, const std::vector<uint32_t>& placement, uint64_t calls, uint64_t pair_bytes) {
  const uint32_t nodes = cluster.size();
  for (uint32_t n = 0; n < nodes; ++n) {
    SCOPED_TRACE("node " + cluster.name(n));
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    const uint64_t here = std::count(placement.begin(), placement.end(), n);
    const uint64_t there = placement.size() - here;
    EXPECT_EQ(c.collectives_served(), calls);
    EXPECT_EQ(c.collectives_failed(), 0u);
    EXPECT_EQ(c.transport_counters().data_frames_sent(), uint64_t{nodes - 1} * calls);
    EXPECT_EQ(c.transport_counters().data_frames_received(), uint64_t{nodes - 1} * calls);
    EXPECT_EQ(c.transport_counters().control_frames_sent(), 0u);
    EXPECT_EQ(c.bytes_sent(), pair_bytes * here * there);
    EXPECT_EQ(c.bytes_received(), pair_bytes * here * there);
    EXPECT_EQ(c.bytes_local(), pair_bytes * here * here);
  }
}

TEST(IalltoallAcrossNodes, TwoNodesMoveOutstandingCallsWhileTheRanksOnlyWatch) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const auto placement = ConsecutivePlacement(2, 2);
  // 2 batches of 3 outstanding calls of 5000 bytes per rank (one in place), each batch lined up
  // by one blocking alltoall of 1 byte.
  RankJob job = Job(dir, cluster, placement, "two", {"--batches", "2", "--outstanding", "3", "--bytes", "5000"});
  AllPass(job, cluster);
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_NE(job.rank(r).Output().find("ok moved_unaided=6 verified_bytes=120000"), std::string::npos)
        << job.rank(r).Output();
  }
  // 8 calls, each one eager round: one frame each way between the two nodes.
  ExpectEagerCounts(cluster, placement, 8, 6 * 5000 + 2 * 1);
}

TEST(IalltoallAcrossNodes, FiveNodesMoveTinyCallsAsAHypercube) {
  TempDir dir;
  Cluster cluster(dir, 5);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const auto placement = ConsecutivePlacement(5, 1);
  // Blocks of 100 bytes at 5 nodes: the default leader table runs the hypercube, whose blocks
  // land in inboxes where ohiod, copying them out for the ranks, must look for them.
  RankJob job = Job(dir, cluster, placement, "cube", {"--batches", "2", "--outstanding", "3", "--bytes", "100"});
  AllPass(job, cluster);
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_NE(job.rank(r).Output().find("ok moved_unaided=6 verified_bytes=3000"), std::string::npos)
        << job.rank(r).Output();
  }
  for (uint32_t n = 0; n < 5; ++n) {
    SCOPED_TRACE("node " + cluster.name(n));
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    EXPECT_EQ(c.collectives_served(), 8u);
    // ceil(log2 5) = 3 messages per call instead of 4, and nothing announced.
    EXPECT_EQ(c.transport_counters().data_frames_sent(), 3u * 8);
    EXPECT_EQ(c.transport_counters().control_frames_sent(), 0u);
  }
}

TEST(IalltoallAcrossNodes, ThreeUnevenNodesWithABlockingCallBetweenPostingAndCompleting) {
  TempDir dir;
  Cluster cluster(dir, 3);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // 2 + 1 + 3 ranks, interleaved: rows break into runs and blocks gather ranks apart.
  const std::vector<uint32_t> placement = {0, 2, 1, 0, 2, 2};
  RankJob job = Job(dir, cluster, placement, "three",
                    {"--batches", "2", "--outstanding", "4", "--bytes", "777", "--blocking-after-posting"});
  AllPass(job, cluster);
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_NE(job.rank(r).Output().find("ok moved_unaided=8 verified_bytes=" + std::to_string(8 * 6 * 777)),
              std::string::npos)
        << job.rank(r).Output();
  }
  // Per batch 4 posted calls, the line-up (1 byte) and the blocking call (777 bytes).
  ExpectEagerCounts(cluster, placement, 2 * 6, 2 * 5 * 777 + 2 * 1);
}

TEST(IalltoallAcrossNodes, LargeCallsGoInStagedRounds) {
  TempDir dir;
  // 4 ranks x 1 MB rows do not fit a 1 MiB SSB: every call takes several announced rounds.
  Cluster cluster(dir, 2, {"--ssb-bytes", "1MiB", "--srb-bytes", "256KiB"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RankJob job = Job(dir, cluster, ConsecutivePlacement(2, 2), "staged",
                    {"--outstanding", "2", "--bytes", "1000000", "--blocking-after-posting"});
  AllPass(job, cluster);
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_NE(job.rank(r).Output().find("ok moved_unaided=2 verified_bytes=8000000"), std::string::npos)
        << job.rank(r).Output();
  }
  for (uint32_t n = 0; n < 2; ++n) {
    SCOPED_TRACE("node " + cluster.name(n));
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    // The line-up, 2 posted calls and the blocking one; more rounds than calls.
    EXPECT_EQ(c.collectives_served(), 4u);
    EXPECT_EQ(c.collectives_failed(), 0u);
    EXPECT_GT(c.rounds(), 4u);
    EXPECT_EQ(c.bytes_sent(), 3u * 2 * 2 * 1000000 + 2 * 2 * 1);
    EXPECT_EQ(c.bytes_local(), 3u * 2 * 2 * 1000000 + 2 * 2 * 1);
  }
}

TEST(IalltoallAcrossNodes, ASizeThatDiffersAcrossNodesFailsEveryRankAndTheGroupGoesOn) {
  TempDir dir;
  Cluster cluster(dir, 3);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // One rank per node: node 1 alone passes 65 bytes in the first call, the others 64.
  RankJob job = Job(dir, cluster, ConsecutivePlacement(3, 1), "mismatch",
                    {"--outstanding", "4", "--bytes", "64", "--mismatch-rank", "1"});
  AllPass(job, cluster);
  const std::string text = "call 0: code=6 (size mismatch) ranks disagree on the bytes per rank of this alltoall: 64 "
                           "on nodes " + cluster.name(0) + "," + cluster.name(2) + "; 65 on node " + cluster.name(1) + "\n";
  for (uint32_t r = 0; r < job.size(); ++r) {
    const std::string out = job.rank(r).Output();
    EXPECT_NE(out.find(text), std::string::npos) << "every rank of every node reports the same error\n" << out;
    EXPECT_NE(out.find("ok moved_unaided=3 "), std::string::npos) << out;
  }
  for (uint32_t n = 0; n < 3; ++n) {
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    EXPECT_EQ(c.collectives_failed(), 1u) << "node " << n;
    EXPECT_EQ(c.collectives_served(), 4u) << "node " << n;  // the line-up and the 3 calls after
    EXPECT_EQ(c.groups_failed(), 0u) << "node " << n;
  }
}

TEST(IalltoallAcrossNodes, ARankThatDiesFailsEveryOtherRanksWait) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // Rank 3 (node 1) exits after the line-up without posting; the others post and wait.
  RankJob job = Job(dir, cluster, ConsecutivePlacement(2, 2), "dies", {"--outstanding", "1", "--bytes", "64", "--wait"},
                    [](uint32_t r) { return r == 3 ? std::vector<std::string>{"--die-before-posting"} : std::vector<std::string>{}; });
  const auto codes = job.Wait(kDeadline);
  EXPECT_EQ(codes[3], 3);
  for (uint32_t r = 0; r < 3; ++r) {
    EXPECT_EQ(codes[r], 1) << job.Outputs();
    // Usually in the posted call; a rank on rank 3's peer node may still be copying the line-up
    // out when the news of rank 3 arrives, and then that call fails with the same reason.
    EXPECT_TRUE(std::regex_search(job.rank(r).Output(),
                                  std::regex("(code=7 \\(group failed\\)|lining up failed:) rank 3 .*disconnected")))
        << job.Outputs() << cluster.Logs();
  }
}

TEST(IalltoallAcrossNodes, ARankThatDoesNotPostInTimeFailsEveryRank) {
  TempDir dir;
  Cluster cluster(dir, 2, {"--timeout-ms", "300"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // Rank 1 (node 0) posts 2 s after the others, long past the group's timeout.
  RankJob job = Job(dir, cluster, ConsecutivePlacement(2, 2), "late", {"--outstanding", "1", "--bytes", "64", "--wait"},
                    [](uint32_t r) { return r == 1 ? std::vector<std::string>{"--delay-posting-ms", "2000"} : std::vector<std::string>{}; });
  const auto codes = job.Wait(kDeadline);
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_EQ(codes[r], 1) << job.Outputs();
    EXPECT_TRUE(std::regex_search(job.rank(r).Output(), std::regex("code=8 \\(timeout\\) "))) << job.Outputs();
  }
  // Node 0 names the rank that did not post.
  EXPECT_TRUE(std::regex_search(job.rank(0).Output(),
                                std::regex("rank 1 did not post nonblocking alltoall 1 within 300 ms of the others")))
      << job.Outputs();
}

}  // namespace
}  // namespace ohio::testing
