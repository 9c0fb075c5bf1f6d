// ohio_ialltoallv across nodes (daemon/offloaded_remote_alltoall.h, its alltoallv side in
// offloaded_remote_alltoallv.cc) with real daemons as 2 and 3 nodes on loopback with uneven
// ranks per node and real rank processes: the ranks post several calls (counts per pair and
// call, a third of them zero, send blocks in reverse order, receive blocks rotated, gaps between
// them) and then only watch their receive buffers with plain loads (tests/tools/ialltoall_rank.cc)
// while the daemons write the count tables, copy in, exchange and copy out; every byte and every
// gap is checked, and each daemon counts exactly the calls, rounds, frames (one put per other
// node and round, no control frame) and bytes (only the non-zero pairs' on the wire), as for a
// blocking alltoallv. A blocking alltoall between posting and completing finds the posted calls
// complete (MPI's order); a skewed pair makes every call go in stream rounds; a pair whose counts
// disagree fails that call on every rank of every node with the same error and the group goes
// on, and so does one where a rank posted an alltoall where the others posted an alltoallv; a
// rank that dies fails every other rank's wait instead of hanging it.
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

// What every rank of every node gets when a pair disagrees (the count digest's verdict).
constexpr char kCountsDisagree[] =
    "ranks disagree on the counts of this alltoallv: some rank sends another a number of bytes it does not expect "
    "(MPI's rule: sendcounts[j] on rank i equals recvcounts[i] on rank j)";

RankJob Job(const TempDir& dir, Cluster& cluster, const std::vector<uint32_t>& placement, const std::string& name,
            std::vector<std::string> args, std::function<std::vector<std::string>(uint32_t)> per_rank = nullptr) {
  args.insert(args.begin(), "--vector");
  return RankJob(dir, ControlSockets(cluster), NodeNames(cluster), placement, name, args, std::move(per_rank),
                 std::nullopt, kTool);
}

void AllPass(RankJob& job, Cluster& cluster) {
  for (int c : job.Wait(kDeadline)) EXPECT_EQ(c, 0) << job.Outputs() << cluster.Logs();
}

// The sum over the ranks of each node of what they printed as name=value.
std::vector<uint64_t> SumPerNode(RankJob& job, const std::vector<uint32_t>& placement, uint32_t nodes,
                                 const std::string& name) {
  std::vector<uint64_t> sums(nodes, 0);
  for (uint32_t r = 0; r < job.size(); ++r) {
    std::smatch m;
    const std::string out = job.rank(r).Output();
    EXPECT_TRUE(std::regex_search(out, m, std::regex(name + "=(\\d+)"))) << out;
    if (!m.empty()) sums[placement[r]] += std::stoull(m[1]);
  }
  return sums;
}

// What every node must have counted after a job whose every round was eager: `calls` served
// (posted alltoallvs, line-ups and blocking alltoalls), `rounds` rounds, one data frame to and
// from every other node per round and no control frame; on the wire exactly the bytes the ranks
// sent and received across nodes in their alltoallvs, plus `pair_bytes` per pair of ranks on
// different nodes for the alltoalls (and per pair on the node, locally).
void ExpectCounts(Cluster& cluster, RankJob& job, const std::vector<uint32_t>& placement, uint64_t calls,
                  uint64_t rounds, uint64_t pair_bytes) {
  const uint32_t nodes = cluster.size();
  const auto sent = SumPerNode(job, placement, nodes, "remote_sent_bytes");
  const auto received = SumPerNode(job, placement, nodes, "remote_received_bytes");
  const auto verified = SumPerNode(job, placement, nodes, "verified_bytes");
  for (uint32_t n = 0; n < nodes; ++n) {
    SCOPED_TRACE("node " + cluster.name(n));
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    const uint64_t here = std::count(placement.begin(), placement.end(), n);
    const uint64_t there = placement.size() - here;
    EXPECT_EQ(c.collectives_served(), calls);
    EXPECT_EQ(c.collectives_failed(), 0u);
    EXPECT_EQ(c.rounds(), rounds);
    EXPECT_EQ(c.transport_counters().data_frames_sent(), uint64_t{nodes - 1} * rounds);
    EXPECT_EQ(c.transport_counters().data_frames_received(), uint64_t{nodes - 1} * rounds);
    EXPECT_EQ(c.transport_counters().control_frames_sent(), 0u);
    EXPECT_EQ(c.bytes_sent(), sent[n] + pair_bytes * here * there);
    EXPECT_EQ(c.bytes_received(), received[n] + pair_bytes * here * there);
    EXPECT_EQ(c.bytes_local(), verified[n] - received[n] + pair_bytes * here * here);
  }
}

TEST(IalltoallvAcrossNodes, TwoUnevenNodesMoveOutstandingCallsWhileTheRanksOnlyWatch) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // 2 + 3 ranks, interleaved: a node's ranks are not consecutive in the group.
  const std::vector<uint32_t> placement = {0, 1, 1, 0, 1};
  // 2 batches of 3 outstanding calls of pairs around 2000 bytes, each batch lined up by one
  // blocking alltoall of 1 byte.
  RankJob job = Job(dir, cluster, placement, "two", {"--batches", "2", "--outstanding", "3", "--bytes", "2000"});
  AllPass(job, cluster);
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_NE(job.rank(r).Output().find("ok moved_unaided=6 "), std::string::npos) << job.rank(r).Output();
  }
  // 8 calls, each one eager round.
  ExpectCounts(cluster, job, placement, 8, 8, 2 * 1);
}

TEST(IalltoallvAcrossNodes, ThreeUnevenNodesWithABlockingCallBetweenPostingAndCompleting) {
  TempDir dir;
  Cluster cluster(dir, 3);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // 2 + 1 + 3 ranks, interleaved.
  const std::vector<uint32_t> placement = {0, 2, 1, 0, 2, 2};
  RankJob job = Job(dir, cluster, placement, "three",
                    {"--batches", "2", "--outstanding", "4", "--bytes", "777", "--blocking-after-posting"});
  AllPass(job, cluster);
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_NE(job.rank(r).Output().find("ok moved_unaided=8 "), std::string::npos) << job.rank(r).Output();
  }
  // Per batch 4 posted calls, the line-up (1 byte) and the blocking alltoall (777 bytes).
  ExpectCounts(cluster, job, placement, 2 * 6, 2 * 6, 2 * (1 + 777));
}

TEST(IalltoallvAcrossNodes, ASkewedPairMakesEveryCallGoInStreamRounds) {
  TempDir dir;
  // Halves of 128 KiB: node 0 (2 ranks) streams 32 KiB of each of its ranks' streams a round.
  Cluster cluster(dir, 2, {"--ssb-bytes", "256KiB", "--srb-bytes", "256KiB"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::vector<uint32_t> placement = {0, 1, 1, 0, 1};
  // Rank 0 sends rank 4 100,000 bytes (and the call's index) every call: with its pairs to
  // ranks 1 and 2, at most 104,016 bytes to node 1, 4 slices; every other stream fits one. So a
  // call is 5 rounds: the counts' check and 4 stream rounds.
  RankJob job = Job(dir, cluster, placement, "skewed",
                    {"--outstanding", "3", "--bytes", "2000", "--skew-from", "0", "--skew-to", "4", "--skew-bytes",
                     "100000", "--blocking-after-posting"});
  AllPass(job, cluster);
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_NE(job.rank(r).Output().find("ok moved_unaided=3 "), std::string::npos) << job.rank(r).Output();
  }
  // The line-up, 3 posted calls of 5 rounds, and the blocking alltoall of 2000 bytes.
  ExpectCounts(cluster, job, placement, 5, 1 + 3 * 5 + 1, 1 + 2000);
}

TEST(IalltoallvAcrossNodes, APairThatDisagreesFailsThatCallOnEveryRankAlikeAndTheGroupGoesOn) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // Rank 1 (node 1) sends rank 0 (node 0) one byte more than rank 0 expects in the first call.
  const std::vector<uint32_t> placement = {0, 1, 1};
  RankJob job = Job(dir, cluster, placement, "mismatch",
                    {"--outstanding", "4", "--bytes", "300", "--mismatch-rank", "1"});
  AllPass(job, cluster);
  for (uint32_t r = 0; r < job.size(); ++r) {
    const std::string out = job.rank(r).Output();
    EXPECT_NE(out.find("call 0: code=6 (size mismatch) " + std::string(kCountsDisagree) + "\n"), std::string::npos)
        << "every rank of every node reports the same error\n"
        << out;
    EXPECT_NE(out.find("ok moved_unaided=3 "), std::string::npos) << out;
  }
  for (uint32_t n = 0; n < 2; ++n) {
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    EXPECT_EQ(c.collectives_failed(), 1u) << "node " << n;
    EXPECT_EQ(c.collectives_served(), 4u) << "node " << n;  // the line-up and the 3 calls after
    EXPECT_EQ(c.groups_failed(), 0u) << "node " << n;
  }
}

TEST(IalltoallvAcrossNodes, ARankPostingAnAlltoallWhereTheOthersPostAnAlltoallvFailsThatCallOnEveryRank) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // Rank 3 (node 0) posts the first call as an ohio_ialltoall: node 0's ranks arrive with
  // different kinds, as blocking calls of the two kinds would, and the round fails everywhere.
  const std::vector<uint32_t> placement = {0, 1, 1, 0, 1};
  RankJob job = Job(dir, cluster, placement, "kinds", {"--outstanding", "3", "--bytes", "300", "--alltoall-rank", "3"});
  AllPass(job, cluster);
  for (uint32_t r = 0; r < job.size(); ++r) {
    const std::string out = job.rank(r).Output();
    EXPECT_NE(out.find("call 0: code=6 (size mismatch) "), std::string::npos) << out;
    EXPECT_NE(out.find("ok moved_unaided=2 "), std::string::npos) << out;
  }
  for (uint32_t r : {0u, 3u}) {
    EXPECT_NE(job.rank(r).Output().find("call 0: code=6 (size mismatch) rank 0 called alltoallv while rank 3 called "
                                        "alltoall\n"),
              std::string::npos)
        << job.rank(r).Output();
  }
  for (uint32_t n = 0; n < 2; ++n) {
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    EXPECT_EQ(c.collectives_failed(), 1u) << "node " << n;
    EXPECT_EQ(c.collectives_served(), 3u) << "node " << n;  // the line-up and the 2 calls after
    EXPECT_EQ(c.groups_failed(), 0u) << "node " << n;
  }
}

TEST(IalltoallvAcrossNodes, ARankThatDiesFailsEveryOtherRanksWait) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // Rank 4 (node 1) exits after the line-up without posting; the others post and wait.
  RankJob job = Job(dir, cluster, {0, 1, 0, 0, 1}, "dies", {"--outstanding", "2", "--bytes", "500", "--wait"},
                    [](uint32_t r) { return r == 4 ? std::vector<std::string>{"--die-before-posting"} : std::vector<std::string>{}; });
  const auto codes = job.Wait(kDeadline);
  EXPECT_EQ(codes[4], 3);
  for (uint32_t r = 0; r < 4; ++r) {
    EXPECT_EQ(codes[r], 1) << job.Outputs();
    // Usually in the posted call; a rank on rank 4's peer node may still be copying the line-up
    // out when the news of rank 4 arrives, and then that call fails with the same reason.
    EXPECT_TRUE(std::regex_search(job.rank(r).Output(),
                                  std::regex("(code=7 \\(group failed\\)|lining up failed:) rank 4 .*disconnected")))
        << job.Outputs() << cluster.Logs();
  }
}

}  // namespace
}  // namespace ohio::testing
