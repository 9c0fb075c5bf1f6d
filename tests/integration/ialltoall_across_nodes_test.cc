// ohio_ialltoall across nodes (daemon/engine/nonblocking_across_nodes_alltoall.h) with real daemons as 2 and 3
// nodes on loopback and real rank processes: the ranks start several calls and then only watch
// their receive buffers with plain loads (tests/tools/ialltoall_rank.cc) while the daemons copy
// in, exchange and copy out; every byte is checked, and each daemon counts exactly the calls,
// the frames to and from every other node and the bytes. A blocking alltoall between starting
// and completing finds the nonblocking calls complete (MPI's order); large calls go in staged rounds;
// a size that differs across nodes fails that call on every rank of every node and the group
// goes on; a rank that dies, or starts too late, fails every rank's wait instead of hanging it.
//
// ohio_ialltoallv across nodes likewise (its daemon side in nonblocking_across_nodes_alltoallv.cc), on
// 2 and 3 nodes with uneven ranks per node: counts per pair and call, a third of them zero, send
// blocks in reverse order, receive blocks rotated, gaps between them, every byte and gap
// checked; each daemon counts the calls, rounds, frames (one put per other node and round, no
// control frame) and bytes (only the non-zero pairs' on the wire) exactly, as for a blocking
// alltoallv. A skewed pair makes every call go in stream rounds; a pair whose counts disagree,
// or a rank starting an alltoall where the others start an alltoallv, fails that call on every
// rank and the group goes on; a rank that dies fails the others' wait.
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
// (nonblocking calls, line-ups and blocking alltoalls), `rounds` rounds, one data frame to and from
// every other node per round and no control frame; on the wire exactly `pair_bytes` per pair of
// ranks on different nodes for the alltoalls (and per pair on the node, locally), plus what the
// ranks of `vector_job`, if any, sent and received across nodes in their alltoallvs.
void ExpectEagerCounts(Cluster& cluster, const std::vector<uint32_t>& placement, uint64_t calls, uint64_t rounds,
                       uint64_t pair_bytes, RankJob* vector_job = nullptr) {
  const uint32_t nodes = cluster.size();
  std::vector<uint64_t> sent(nodes, 0), received(nodes, 0), verified(nodes, 0);
  if (vector_job != nullptr) {
    sent = SumPerNode(*vector_job, placement, nodes, "remote_sent_bytes");
    received = SumPerNode(*vector_job, placement, nodes, "remote_received_bytes");
    verified = SumPerNode(*vector_job, placement, nodes, "verified_bytes");
  }
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

// Every rank of `job` saw `calls` calls complete while it only watched its memory.
void ExpectMovedUnaided(RankJob& job, uint32_t calls) {
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_NE(job.rank(r).Output().find("ok moved_unaided=" + std::to_string(calls) + " "), std::string::npos)
        << job.rank(r).Output();
  }
}

// Rank `dead` of `job` exited (code 3) after the line-up without starting; every other rank's
// call failed (exit 1) saying that rank disconnected: usually in the nonblocking call, but a rank on
// the dead rank's peer node may still be copying the line-up out when the news arrives, and
// then that call fails with the same reason.
void ExpectTheOthersFailOnceDead(RankJob& job, Cluster& cluster, uint32_t dead) {
  const auto codes = job.Wait(kDeadline);
  const std::regex why("(code=7 \\(group failed\\)|lining up failed:) rank " + std::to_string(dead) + " .*disconnected");
  for (uint32_t r = 0; r < job.size(); ++r) {
    if (r == dead) {
      EXPECT_EQ(codes[r], 3) << job.Outputs();
      continue;
    }
    EXPECT_EQ(codes[r], 1) << job.Outputs();
    EXPECT_TRUE(std::regex_search(job.rank(r).Output(), why)) << job.Outputs() << cluster.Logs();
  }
}

// The first of the `calls` calls of a batch failed on every rank with `text` in its line, the
// others were served (every node counted them and the line-up, one failed, no group failed).
void ExpectFirstCallFailedAlike(RankJob& job, Cluster& cluster, const std::string& text, uint32_t calls) {
  for (uint32_t r = 0; r < job.size(); ++r) {
    const std::string out = job.rank(r).Output();
    EXPECT_NE(out.find(text), std::string::npos) << "every rank of every node reports the same error\n" << out;
  }
  ExpectMovedUnaided(job, calls - 1);
  for (uint32_t n = 0; n < cluster.size(); ++n) {
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    EXPECT_EQ(c.collectives_failed(), 1u) << "node " << n;
    EXPECT_EQ(c.collectives_served(), calls) << "node " << n;
    EXPECT_EQ(c.groups_failed(), 0u) << "node " << n;
  }
}

// Every node of `cluster` served `calls` calls in `rounds` rounds, sending `frames` data frames
// and no control frame.
void ExpectEveryNodeServed(Cluster& cluster, uint64_t calls, uint64_t rounds, uint64_t frames) {
  for (uint32_t n = 0; n < cluster.size(); ++n) {
    SCOPED_TRACE("node " + cluster.name(n));
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    EXPECT_EQ(c.collectives_served(), calls);
    EXPECT_EQ(c.rounds(), rounds);
    EXPECT_EQ(c.transport_counters().data_frames_sent(), frames);
    EXPECT_EQ(c.transport_counters().control_frames_sent(), 0u);
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
  ExpectEagerCounts(cluster, placement, 8, 8, 6 * 5000 + 2 * 1);
}

TEST(IalltoallAcrossNodes, FiveNodesMoveTinyCallsAsAHypercube) {
  TempDir dir;
  Cluster cluster(dir, 5);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const auto placement = ConsecutivePlacement(5, 1);
  // Blocks of 100 bytes at 5 nodes: the default inter-node table runs the hypercube, whose blocks
  // land in inboxes where ohiod, copying them out for the ranks, must look for them.
  RankJob job = Job(dir, cluster, placement, "cube", {"--batches", "2", "--outstanding", "3", "--bytes", "100"});
  AllPass(job, cluster);
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_NE(job.rank(r).Output().find("ok moved_unaided=6 verified_bytes=3000"), std::string::npos)
        << job.rank(r).Output();
  }
  // 8 calls of one round, ceil(log2 5) = 3 messages per call instead of 4, nothing announced.
  ExpectEveryNodeServed(cluster, 8, 8, 3u * 8);
}

TEST(IalltoallAcrossNodes, ThreeUnevenNodesWithABlockingCallBetweenStartingAndCompleting) {
  TempDir dir;
  Cluster cluster(dir, 3);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // 2 + 1 + 3 ranks, interleaved: rows break into runs and blocks gather ranks apart.
  const std::vector<uint32_t> placement = {0, 2, 1, 0, 2, 2};
  RankJob job = Job(dir, cluster, placement, "three",
                    {"--batches", "2", "--outstanding", "4", "--bytes", "777", "--blocking-after-starting"});
  AllPass(job, cluster);
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_NE(job.rank(r).Output().find("ok moved_unaided=8 verified_bytes=" + std::to_string(8 * 6 * 777)),
              std::string::npos)
        << job.rank(r).Output();
  }
  // Per batch 4 nonblocking calls, the line-up (1 byte) and the blocking call (777 bytes).
  ExpectEagerCounts(cluster, placement, 2 * 6, 2 * 6, 2 * 5 * 777 + 2 * 1);
}

TEST(IalltoallAcrossNodes, LargeCallsGoInStagedRounds) {
  TempDir dir;
  // 4 ranks x 1 MB rows do not fit a 1 MiB SSB: every call takes several announced rounds.
  Cluster cluster(dir, 2, {"--ssb-bytes", "1MiB", "--srb-bytes", "256KiB"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RankJob job = Job(dir, cluster, ConsecutivePlacement(2, 2), "staged",
                    {"--outstanding", "2", "--bytes", "1000000", "--blocking-after-starting"});
  AllPass(job, cluster);
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_NE(job.rank(r).Output().find("ok moved_unaided=2 verified_bytes=8000000"), std::string::npos)
        << job.rank(r).Output();
  }
  for (uint32_t n = 0; n < 2; ++n) {
    SCOPED_TRACE("node " + cluster.name(n));
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    // The line-up, 2 nonblocking calls and the blocking one; more rounds than calls.
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
  ExpectFirstCallFailedAlike(job, cluster, text, 4);
}

TEST(IalltoallAcrossNodes, ARankThatDiesFailsEveryOtherRanksWait) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // Rank 3 (node 1) exits after the line-up without starting; the others start and wait.
  RankJob job = Job(dir, cluster, ConsecutivePlacement(2, 2), "dies", {"--outstanding", "1", "--bytes", "64", "--wait"},
                    [](uint32_t r) { return r == 3 ? std::vector<std::string>{"--die-before-starting"} : std::vector<std::string>{}; });
  ExpectTheOthersFailOnceDead(job, cluster, 3);
}

TEST(IalltoallAcrossNodes, ARankThatDoesNotPostInTimeFailsEveryRank) {
  TempDir dir;
  // The timeout also bounds the group's setup across nodes (the first dial of the peer daemon,
  // which a loaded machine can take hundreds of milliseconds over): 300 ms failed that setup
  // instead of the call under test.
  Cluster cluster(dir, 2, {"--timeout-ms", "2000"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // Rank 1 (node 0) starts 6 s after the others, long past the group's timeout.
  RankJob job = Job(dir, cluster, ConsecutivePlacement(2, 2), "late", {"--outstanding", "1", "--bytes", "64", "--wait"},
                    [](uint32_t r) { return r == 1 ? std::vector<std::string>{"--delay-starting-ms", "6000"} : std::vector<std::string>{}; });
  const auto codes = job.Wait(kDeadline);
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_EQ(codes[r], 1) << job.Outputs();
    EXPECT_TRUE(std::regex_search(job.rank(r).Output(), std::regex("code=8 \\(timeout\\) "))) << job.Outputs();
  }
  // Node 0 names the rank that did not start.
  EXPECT_TRUE(std::regex_search(job.rank(0).Output(),
                                std::regex("rank 1 did not start nonblocking alltoall 1 within 2000 ms of the others")))
      << job.Outputs();
}

// What every rank of every node gets when a pair disagrees: the first disagreeing pair, found
// from every node's count tables once the digest failed (--mismatch-rank 1 adds a byte to what
// rank 1 sends rank 0).
constexpr char kCountsDisagree[] = "rank 1 sends 306 bytes to rank 0, which expects 305 from it";

// A job of ohio_ialltoallv calls.
RankJob VectorJob(const TempDir& dir, Cluster& cluster, const std::vector<uint32_t>& placement,
                  const std::string& name, std::vector<std::string> args,
                  std::function<std::vector<std::string>(uint32_t)> per_rank = nullptr) {
  args.insert(args.begin(), "--vector");
  return Job(dir, cluster, placement, name, args, std::move(per_rank));
}

TEST(IalltoallvAcrossNodes, TwoUnevenNodesMoveOutstandingCallsWhileTheRanksOnlyWatch) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // 2 + 3 ranks, interleaved: a node's ranks are not consecutive in the group.
  const std::vector<uint32_t> placement = {0, 1, 1, 0, 1};
  // 2 batches of 3 outstanding calls of pairs around 2000 bytes, each batch lined up by one
  // blocking alltoall of 1 byte.
  RankJob job = VectorJob(dir, cluster, placement, "two", {"--batches", "2", "--outstanding", "3", "--bytes", "2000"});
  AllPass(job, cluster);
  ExpectMovedUnaided(job, 6);
  // 8 calls, each one eager round.
  ExpectEagerCounts(cluster, placement, 8, 8, 2 * 1, &job);
}

TEST(IalltoallvAcrossNodes, FourNodesMoveOutstandingCallsAsAHypercube) {
  TempDir dir;
  Cluster cluster(dir, 4);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const auto placement = ConsecutivePlacement(4, 2);
  // Pairs around 300 bytes among 4 nodes: ohiod runs each nonblocking alltoallv as a hypercube
  // (shm/plan/vector_cube.h) and copies its blocks out from where the inboxes' size tables put them.
  RankJob job = VectorJob(dir, cluster, placement, "cube", {"--batches", "2", "--outstanding", "3", "--bytes", "300"});
  AllPass(job, cluster);
  ExpectMovedUnaided(job, 6);
  // 6 nonblocking calls and 2 line-ups (alltoalls of 1 byte), each 2 messages a node, not 3.
  ExpectEveryNodeServed(cluster, 8, 8, 2u * 8);
}

TEST(IalltoallvAcrossNodes, ABlockOverTheHypercubesCapAmongFourNodesSendsTheCallBackAndTheRestRunPairwise) {
  TempDir dir;
  Cluster cluster(dir, 4);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const auto placement = ConsecutivePlacement(4, 2);
  // Rank 0 (node 0) sends rank 7 (node 3) 20,000 bytes and more every call: a block over the
  // 8 KiB the hypercube carries. The first nonblocking call goes as a hypercube of headers only, then
  // again pairwise, ohiod staging it twice for the ranks; the ones after run pairwise at once.
  RankJob job = VectorJob(dir, cluster, placement, "cube-back",
                          {"--batches", "2", "--outstanding", "3", "--bytes", "300", "--skew-from", "0", "--skew-to",
                           "7", "--skew-bytes", "20000"});
  AllPass(job, cluster);
  ExpectMovedUnaided(job, 6);
  // The first nonblocking call 2 rounds (2 + 3 messages), the 5 others 1 (3 each), the 2 line-ups
  // (alltoalls of 1 byte) 1 each (2 each).
  ExpectEveryNodeServed(cluster, 8, 2 + 5 + 2, (2 + 3) + 5 * 3 + 2 * 2);
}

TEST(IalltoallvAcrossNodes, ANodeStartingAnAlltoallWhereTheOthersRunAnAlltoallvAsAHypercubeFailsEveryRank) {
  TempDir dir;
  Cluster cluster(dir, 4);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // One rank a node: node 3 starts its first call as an ohio_ialltoall (of 1 byte), a hypercube
  // of its own, while the others run an alltoallv one. Each learns from the first header it
  // reads that another kind runs, every node tells every node its call, and the call fails alike.
  const auto placement = ConsecutivePlacement(4, 1);
  RankJob job =
      VectorJob(dir, cluster, placement, "cube-kinds", {"--outstanding", "3", "--bytes", "300", "--alltoall-rank", "3"});
  AllPass(job, cluster);
  ExpectFirstCallFailedAlike(job, cluster,
                             "call 0: code=6 (size mismatch) ranks disagree on the bytes per rank of this alltoall: "
                             "1 on node " + cluster.name(3) + "; an alltoallv on nodes " + cluster.name(0) + "," +
                                 cluster.name(1) + "," + cluster.name(2) + "\n",
                             3);
}

TEST(IalltoallvAcrossNodes, ThreeUnevenNodesWithABlockingCallBetweenStartingAndCompleting) {
  TempDir dir;
  Cluster cluster(dir, 3);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // 2 + 2 + 3 ranks, interleaved, node 2 first in the group.
  const std::vector<uint32_t> placement = {2, 0, 1, 2, 0, 2, 1};
  RankJob job = VectorJob(dir, cluster, placement, "three",
                          {"--batches", "3", "--outstanding", "2", "--bytes", "1500", "--blocking-after-starting"});
  AllPass(job, cluster);
  ExpectMovedUnaided(job, 6);
  // Per batch 2 nonblocking calls, the line-up (1 byte) and the blocking alltoall (1500 bytes).
  ExpectEagerCounts(cluster, placement, 3 * 4, 3 * 4, 3 * (1 + 1500), &job);
}

TEST(IalltoallvAcrossNodes, ASkewedPairMakesEveryCallGoInStreamRounds) {
  TempDir dir;
  // Halves of 128 KiB: node 0 (2 ranks) streams 32 KiB of each of its ranks' streams a round.
  Cluster cluster(dir, 2, {"--ssb-bytes", "256KiB", "--srb-bytes", "256KiB"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::vector<uint32_t> placement = {0, 1, 1, 0, 1};
  // Rank 0 sends rank 4 100,000 bytes (and the call's index) every call: with its pairs to
  // ranks 1 and 2, at most 104,016 bytes to node 1, 4 slices; every other stream fits one. So a
  // call is 4 rounds: the counts' check, which carries the first slice, and 3 stream rounds.
  RankJob job = VectorJob(dir, cluster, placement, "skewed",
                          {"--outstanding", "3", "--bytes", "2000", "--skew-from", "0", "--skew-to", "4",
                           "--skew-bytes", "100000", "--blocking-after-starting"});
  AllPass(job, cluster);
  ExpectMovedUnaided(job, 3);
  // The line-up, 3 nonblocking calls of 4 rounds, and the blocking alltoall of 2000 bytes.
  ExpectEagerCounts(cluster, placement, 5, 1 + 3 * 4 + 1, 1 + 2000, &job);
}

TEST(IalltoallvAcrossNodes, APairThatDisagreesFailsThatCallOnEveryRankAlikeAndTheGroupGoesOn) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // Rank 1 (node 1) sends rank 0 (node 0) one byte more than rank 0 expects in the first call.
  const std::vector<uint32_t> placement = {0, 1, 1};
  RankJob job = VectorJob(dir, cluster, placement, "mismatch",
                          {"--outstanding", "4", "--bytes", "300", "--mismatch-rank", "1"});
  AllPass(job, cluster);
  ExpectFirstCallFailedAlike(job, cluster, "call 0: code=6 (size mismatch) " + std::string(kCountsDisagree) + "\n",
                             4);
}

TEST(IalltoallvAcrossNodes, ARankStartingAnAlltoallWhereTheOthersStartAnAlltoallvFailsThatCallOnEveryRank) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // Rank 3 (node 0) starts the first call as an ohio_ialltoall: node 0's ranks arrive with
  // different kinds, as blocking calls of the two kinds would, and the round fails everywhere.
  const std::vector<uint32_t> placement = {0, 1, 1, 0, 1};
  RankJob job =
      VectorJob(dir, cluster, placement, "kinds", {"--outstanding", "3", "--bytes", "300", "--alltoall-rank", "3"});
  AllPass(job, cluster);
  ExpectFirstCallFailedAlike(job, cluster, "call 0: code=6 (size mismatch) ", 3);
  // Node 0's ranks say who called what; node 1's learn only that node 0's ranks disagree (the
  // blocking path's texts).
  for (uint32_t r = 0; r < job.size(); ++r) {
    const std::string text = placement[r] == 0 ? "rank 0 called alltoallv while rank 3 called alltoall\n"
                                               : "ranks disagree on the bytes per rank of this alltoall: node " +
                                                     cluster.name(0) + "'s own ranks disagree\n";
    EXPECT_NE(job.rank(r).Output().find("call 0: code=6 (size mismatch) " + text), std::string::npos)
        << job.rank(r).Output();
  }
}

TEST(IalltoallvAcrossNodes, ARankThatDiesFailsEveryOtherRanksWait) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // Rank 4 (node 1) exits after the line-up without starting; the others start and wait.
  RankJob job = VectorJob(dir, cluster, {0, 1, 0, 0, 1}, "dies", {"--outstanding", "2", "--bytes", "500", "--wait"},
                          [](uint32_t r) {
                            return r == 4 ? std::vector<std::string>{"--die-before-starting"} : std::vector<std::string>{};
                          });
  ExpectTheOthersFailOnceDead(job, cluster, 4);
}

}  // namespace
}  // namespace ohio::testing
