// ohio_alltoallv through real daemons and real rank processes, on one node
// (client/libohio/on_node_alltoallv.cc) and across nodes (client/libohio/across_nodes_alltoallv.cc): counts drawn per
// pair and call with zeros among them, blocks out of order with gaps, every byte and every gap
// checked by the rank tool; on one node, small rows staged through the SSB with the ranks
// meeting once (no read in place, no wait for readers in the stage report), large rows read in
// place, both in one call; a pair whose counts disagree fails the call on every rank with the
// same message, naming the first such pair (across nodes too, at the cost of one put of count
// tables per node pair, on the failed call only), and the group goes on; a call across nodes
// too large for one round goes in several (a round that checks the counts and carries the first
// slice of every stream, then stream rounds), as many as its longest stream needs, with one pair
// skewed far above the rest, on 2 and 3 nodes with uneven ranks per node; the daemons count the calls, rounds, frames and bytes exactly, on the wire only the
// non-zero pairs' bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "shm/plan/bruck_plan.h"
#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/scoped_env.h"
#include "tests/harness/stage_lines.h"

namespace ohio::testing {
namespace {

using std::chrono::seconds;

constexpr auto kDeadline = seconds(90);

using Ranks = std::vector<std::unique_ptr<Process>>;

Ranks VectorJob(const TempDir& dir, const std::vector<std::string>& sockets, const std::vector<std::string>& nodes,
                const std::vector<uint32_t>& rank_node, const std::string& name,
                const std::vector<std::string>& args) {
  Ranks ranks;
  for (uint32_t r = 0; r < rank_node.size(); ++r) {
    std::vector<std::string> argv = {RunfilePath("tests/tools/alltoallv_rank"), "--socket", sockets[rank_node[r]],
                                     "--key", KeyHex(name), "--size", std::to_string(rank_node.size()), "--rank",
                                     std::to_string(r), "--nodes"};
    argv.insert(argv.end(), nodes.begin(), nodes.end());
    argv.push_back("--rank-node");
    for (uint32_t n : rank_node) argv.push_back(std::to_string(n));
    argv.insert(argv.end(), args.begin(), args.end());
    ranks.push_back(std::make_unique<Process>(argv, dir.file(name + ".rank" + std::to_string(r) + ".out")));
  }
  return ranks;
}

Ranks OneNodeJob(const TempDir& dir, Daemon& d, const std::string& node, uint32_t size, const std::string& name,
                 const std::vector<std::string>& args) {
  return VectorJob(dir, {d.socket()}, {node}, std::vector<uint32_t>(size, 0), name, args);
}

std::string Outputs(const Ranks& ranks) {
  std::string s;
  for (const auto& r : ranks) s += r->Output();
  return s;
}

// Every rank exits 0; returns the bytes they verified together.
uint64_t AllPass(Ranks& ranks) {
  uint64_t verified = 0;
  for (auto& r : ranks) {
    EXPECT_EQ(r->Wait(kDeadline), 0) << Outputs(ranks);
    std::smatch m;
    const std::string out = r->Output();
    if (std::regex_search(out, m, std::regex("verified_bytes=(\\d+)"))) verified += std::stoull(m[1]);
  }
  return verified;
}

std::string NodeName(Daemon& d) {
  const StatusQuery s = QueryStatus(d.admin_socket());
  EXPECT_TRUE(s.ok) << s.error;
  return s.reply.node_name();
}

TEST(Alltoallv, RandomCountsWithZerosOutOfOrderOnOneNode) {
  TempDir dir;
  Daemon daemon(dir, {});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const std::string node = NodeName(daemon);
  Ranks small = OneNodeJob(dir, daemon, node, 4, "small", {"--calls", "40", "--max-bytes", "3000", "--seed", "7"});
  const uint64_t small_bytes = AllPass(small);
  // Pairs up to 256 KiB: several pages per read, ranks interleaved.
  Ranks large = OneNodeJob(dir, daemon, node, 3, "large", {"--calls", "6", "--max-bytes", "262144", "--seed", "8"});
  const uint64_t large_bytes = AllPass(large);
  EXPECT_GT(small_bytes, 0u);
  EXPECT_GT(large_bytes, small_bytes);
  // The daemon folds what local rank 0 counted: every call, and exactly the bytes received.
  const admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(c.collectives_served(), 46u);
  EXPECT_EQ(c.bytes_local(), small_bytes + large_bytes);
  EXPECT_EQ(c.collectives_failed(), 0u);
}

TEST(Alltoallv, SmallCallsOnOneNodeAreStagedAndTheRanksMeetOnce) {
  TempDir dir;
  Daemon daemon(dir, {});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  StageTimes on;
  // An alltoall before every call but the first: both kinds take turns in the SSB halves.
  constexpr uint32_t kCalls = 30, kAlltoallBytes = 100;
  Ranks ranks = OneNodeJob(dir, daemon, NodeName(daemon), 4, "staged",
                           {"--calls", std::to_string(kCalls), "--max-bytes", "3000", "--seed", "11",
                            "--alltoall-bytes", std::to_string(kAlltoallBytes)});
  const uint64_t verified = AllPass(ranks);
  EXPECT_GT(verified, 0u);
  for (uint32_t r = 0; r < ranks.size(); ++r) {
    const std::vector<StageFields> lines = StageLines(ranks[r]->Output());
    ASSERT_FALSE(lines.empty()) << ranks[r]->Output();
    double calls = 0, copied_in = 0;
    for (const StageFields& f : lines) {
      calls += f.at("calls");
      copied_in += f.at("copy_in_us");
      // Nothing read from another rank's buffer, and no wait for readers after copying out:
      // the one meeting was all (the path that reads in place meets a second time).
      EXPECT_EQ(f.at("read_peers_us"), 0.0) << "rank " << r << ": " << ranks[r]->Output();
      EXPECT_EQ(f.at("await_readers_us"), 0.0) << "rank " << r << ": " << ranks[r]->Output();
    }
    EXPECT_EQ(calls, 2 * kCalls - 1) << "rank " << r;
    EXPECT_GT(copied_in, 0.0) << "rank " << r;
  }
  const admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(c.collectives_served(), 2 * kCalls - 1);
  EXPECT_EQ(c.collectives_failed(), 0u);
  EXPECT_EQ(c.bytes_local(), verified + uint64_t{kCalls - 1} * 4 * 4 * kAlltoallBytes);
}

TEST(Alltoallv, RowsStagedAndARowReadInPlaceMixInOneCallOnOneNode) {
  TempDir dir;
  Daemon daemon(dir, {});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  StageTimes on;
  // The switch where every rank has a core (32 KiB): on a box whose ranks share them it is
  // 256 KiB (client/libohio/single_copy.h), and this test is about rows read in place beside staged ones.
  ScopedEnv single_copy("OHIO_SINGLE_COPY_BYTES", "32768");
  // Rank 0 sends up to 200 KB a pair, above the single-copy switch; the others up to 2000 bytes.
  Ranks ranks = OneNodeJob(dir, daemon, NodeName(daemon), 3, "mixed",
                           {"--calls", "8", "--max-bytes", "2000", "--seed", "5", "--large-sender", "0",
                            "--large-bytes", "200000"});
  const uint64_t verified = AllPass(ranks);
  for (uint32_t r = 1; r < ranks.size(); ++r) {
    bool mixed = false;
    for (const StageFields& f : StageLines(ranks[r]->Output())) {
      // Its own row staged, rank 0's read in place, then the wait until rank 0's readers are done.
      mixed = mixed || (f.at("copy_in_us") > 0 && f.at("read_peers_us") > 0 && f.at("await_readers_us") > 0);
    }
    EXPECT_TRUE(mixed) << "rank " << r << ": " << ranks[r]->Output();
  }
  const admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(c.collectives_served(), 8u);
  EXPECT_EQ(c.bytes_local(), verified);
}

TEST(Alltoallv, AGroupSizedForSmallCallsOnOneNodeStagesWhatFitsAndReadsTheRestInPlace) {
  TempDir dir;
  Daemon daemon(dir, {});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  // Buffers for alltoalls of 256 bytes: a 1 KiB region per rank, in piece slots of 256 bytes.
  // Counts up to 600: rows in piece slots, rows packed, rows too large read in place, mixed.
  Ranks ranks = OneNodeJob(dir, daemon, NodeName(daemon), 4, "sized",
                           {"--calls", "20", "--max-bytes", "600", "--seed", "13", "--hint", "256"});
  const uint64_t verified = AllPass(ranks);
  const admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(c.collectives_served(), 20u);
  EXPECT_EQ(c.collectives_failed(), 0u);
  EXPECT_EQ(c.bytes_local(), verified);
}

// Rank 1 expects one byte more from rank 2 in call 0; calls 1-4 are verified as usual.
void ExpectMismatchEverywhere(Daemon& daemon, const TempDir& dir, const std::string& name,
                              const std::vector<std::string>& counts) {
  std::vector<std::string> args = {"--calls", "5", "--mismatch-rank", "1"};
  args.insert(args.end(), counts.begin(), counts.end());
  Ranks ranks = OneNodeJob(dir, daemon, NodeName(daemon), 3, name, args);
  AllPass(ranks);
  std::string first;
  for (const auto& r : ranks) {
    std::smatch m;
    const std::string out = r->Output();
    ASSERT_TRUE(std::regex_search(out, m, std::regex("call 0: code=6 \\(size mismatch\\) (.*)"))) << out;
    EXPECT_TRUE(std::regex_match(std::string(m[1]), std::regex("rank 2 sends (\\d+) bytes to rank 1, which expects "
                                                               "\\d+ from it")))
        << m[1];
    if (first.empty()) first = m[1];
    EXPECT_EQ(m[1], first) << "every rank reports the same pair";
    EXPECT_NE(out.find("ok calls=5"), std::string::npos) << out;
  }
}

TEST(Alltoallv, APairThatDisagreesFailsEveryRankAlikeAndTheGroupGoesOn) {
  TempDir dir;
  Daemon daemon(dir, {});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  // Every row staged.
  ExpectMismatchEverywhere(daemon, dir, "mismatch", {"--max-bytes", "500"});
  // Rank 2's row, the one that disagrees, read in place.
  ExpectMismatchEverywhere(daemon, dir, "mismatch_large", {"--max-bytes", "500", "--large-sender", "2",
                                                           "--large-bytes", "200000"});
  const admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(c.collectives_served(), 8u);
  EXPECT_EQ(c.collectives_failed(), 2u);
}

// What the ranks of each node printed, summed: name=value pairs of their last lines.
std::vector<uint64_t> SumPerNode(const Ranks& ranks, const std::vector<uint32_t>& rank_node, uint32_t nodes,
                                 const std::string& name) {
  std::vector<uint64_t> sums(nodes, 0);
  for (uint32_t r = 0; r < ranks.size(); ++r) {
    std::smatch m;
    const std::string out = ranks[r]->Output();
    EXPECT_TRUE(std::regex_search(out, m, std::regex(name + "=(\\d+)"))) << out;
    if (!m.empty()) sums[rank_node[r]] += std::stoull(m[1]);
  }
  return sums;
}

// The message every rank printed for call `call`, which must be the same on every rank.
std::string SameErrorEverywhere(const Ranks& ranks, uint32_t call, const std::string& code) {
  std::string first;
  for (const auto& r : ranks) {
    std::smatch m;
    const std::string out = r->Output();
    const std::regex line("call " + std::to_string(call) + ": code=" + code + " (.*)");
    EXPECT_TRUE(std::regex_search(out, m, line)) << out;
    if (m.empty()) continue;
    if (first.empty()) first = m[1];
    EXPECT_EQ(m[1], first) << "every rank reports the same error";
  }
  return first;
}

// Checks that every rank got, for call 0, the message naming `source` -> `reader` as the first
// pair that disagrees across nodes, the reader expecting one byte more than is sent (the rank
// tool's --mismatch-rank).
void ExpectPairNamedEverywhere(const Ranks& ranks, uint32_t source, uint32_t reader) {
  const std::string message = SameErrorEverywhere(ranks, 0, "6 \\(size mismatch\\)");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(message, m,
                               std::regex("rank " + std::to_string(source) +
                                          " sends (\\d+) bytes to rank " + std::to_string(reader) +
                                          ", which expects (\\d+) from it")))
      << message;
  EXPECT_EQ(std::stoull(m[2]), std::stoull(m[1]) + 1) << message;
}

// The daemons' counters of `cluster`'s nodes now.
std::vector<admin::CountersReply> CountersOf(Cluster& cluster) {
  std::vector<admin::CountersReply> out;
  for (uint32_t n = 0; n < cluster.size(); ++n) out.push_back(QueryCounters(cluster.node(n).admin_socket()));
  return out;
}

// What a job of `ranks` added to every node's counters from `before` on: `calls` served, none
// failed, `rounds` rounds, one put (data frame) per other node and round and no control frame
// (every round eager: no counts, no ROUND_READY), exactly the bytes of the non-zero pairs.
void ExpectServedInRounds(Cluster& cluster, const std::vector<admin::CountersReply>& before, const Ranks& ranks,
                          const std::vector<uint32_t>& placement, uint64_t calls, uint64_t rounds) {
  const uint32_t nodes = cluster.size();
  const auto sent = SumPerNode(ranks, placement, nodes, "remote_sent_bytes");
  const auto received = SumPerNode(ranks, placement, nodes, "remote_received_bytes");
  const auto all = SumPerNode(ranks, placement, nodes, "verified_bytes");
  const auto after = CountersOf(cluster);
  for (uint32_t n = 0; n < nodes; ++n) {
    const admin::CountersReply& a = after[n];
    const admin::CountersReply& b = before[n];
    EXPECT_EQ(a.collectives_served() - b.collectives_served(), calls) << "node " << n;
    EXPECT_EQ(a.collectives_failed() - b.collectives_failed(), 0u) << "node " << n;
    EXPECT_EQ(a.rounds() - b.rounds(), rounds) << "node " << n;
    const auto& at = a.transport_counters();
    const auto& bt = b.transport_counters();
    EXPECT_EQ(at.data_frames_sent() - bt.data_frames_sent(), (nodes - 1) * rounds) << "node " << n;
    EXPECT_EQ(at.data_frames_received() - bt.data_frames_received(), (nodes - 1) * rounds) << "node " << n;
    EXPECT_EQ(at.control_frames_sent() - bt.control_frames_sent(), 0u) << "node " << n;
    EXPECT_EQ(a.bytes_sent() - b.bytes_sent(), sent[n]) << "node " << n;
    EXPECT_EQ(a.bytes_received() - b.bytes_received(), received[n]) << "node " << n;
    EXPECT_EQ(a.bytes_local() - b.bytes_local(), all[n] - received[n]) << "node " << n;
  }
}

// Buffers of 256 KiB (halves of 128 KiB): node 0 of kSkewedPlacement has 2 ranks, so a slice of
// 32 KiB of each of its ranks' streams a round (its 64 KiB region split between the 2 nodes);
// node 1 has 3: 21,824 bytes.
const std::vector<std::string> kSmallBuffers = {"--ssb-bytes", "256KiB", "--srb-bytes", "256KiB"};
const std::vector<uint32_t> kSkewedPlacement = {0, 1, 1, 0, 1};
// Rank 0 sends rank 4 100,000 bytes every call: its stream to node 1 is 100,000 to 106,000
// bytes (the other pairs up to 3,000, a quarter none), 4 slices; every other stream fits one.
// So a call is 4 rounds: the counts' check, which carries every stream's first slice, and 3
// stream rounds (it was 5 while the first round carried headers only).
constexpr uint64_t kSkewedRounds = 4;

Ranks SkewedTwoNodeJob(const TempDir& dir, Cluster& cluster, const std::string& name, uint32_t calls,
                       const std::vector<std::string>& more) {
  std::vector<std::string> args = {"--calls", std::to_string(calls), "--max-bytes", "3000", "--seed", "12",
                                   "--skew-from", "0", "--skew-to", "4", "--skew-bytes", "100000"};
  args.insert(args.end(), more.begin(), more.end());
  return VectorJob(dir, ControlSockets(cluster), NodeNames(cluster), kSkewedPlacement, name, args);
}

TEST(Alltoallv, ASkewedCallAcrossTwoNodesGoesInSeveralRounds) {
  TempDir dir;
  Cluster cluster(dir, 2, kSmallBuffers);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const uint32_t calls = 6;
  const auto before = CountersOf(cluster);
  Ranks ranks = SkewedTwoNodeJob(dir, cluster, "skewed", calls, {});
  EXPECT_GT(AllPass(ranks), uint64_t{calls} * 100000);
  ExpectServedInRounds(cluster, before, ranks, kSkewedPlacement, calls, kSkewedRounds * calls);
}

// 3 calls with every count `bytes` on 2 nodes x 2 ranks with the configured buffers: every
// byte checked, and each call `rounds` rounds of one put per node pair, exactly.
void ExpectEveryCountOnTwoByTwoInRounds(uint64_t bytes, uint64_t rounds) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::vector<uint32_t> placement = {0, 1, 0, 1};
  const uint32_t calls = 3;
  const auto before = CountersOf(cluster);
  Ranks ranks = VectorJob(dir, ControlSockets(cluster), NodeNames(cluster), placement, "every-count",
                          {"--calls", std::to_string(calls), "--every-bytes", std::to_string(bytes)});
  EXPECT_EQ(AllPass(ranks), uint64_t{calls} * 4 * 4 * bytes);
  ExpectServedInRounds(cluster, before, ranks, placement, calls, rounds * calls);
}

TEST(Alltoallv, ANodePairsBlockAsLargeAsItsShareOfTheSrbIsOneRound) {
  // The configured buffers: SRB 8 MiB, halves of 4 MiB, one slot per half for the one source
  // node, with its header line on top (shm/segment_layout.h, SrbHeaderRoomBytes). Every count
  // 1 MiB on 2 x 2: a node pair's block is 4 MiB, and each rank's row the 4 MiB of its SSB
  // region. It used to miss the slot by its 64-byte header: a round that checked the counts,
  // then two stream rounds of 2 MiB - 64 bytes a stream (the second for 64 bytes). Now the
  // call is one round, one put per node pair.
  ExpectEveryCountOnTwoByTwoInRounds(1048576, 1);
}

TEST(Alltoallv, ACallTwiceAsLargeAsARoundTakesAlltoallsTwoRounds) {
  // The configured buffers, as above: every count 2 MiB on 2 x 2 is a node pair's block of
  // 8 MiB, twice a slot. Each rank's stream to a node is 4 MiB, two slices of 2 MiB (its 4 MiB
  // region split between the 2 nodes): the first round checks the counts and carries the first
  // slices, one stream round the second. So 2 rounds and one put per node pair and round, as an
  // alltoall of 2 MiB takes (it was 3: a round of headers only, then two stream rounds).
  ExpectEveryCountOnTwoByTwoInRounds(2097152, 2);
}

TEST(Alltoallv, RandomCountsAcrossThreeNodesWithUnevenPlacementGoInSeveralRounds) {
  TempDir dir;
  // Halves of 128 KiB, a slot of 64 KiB per source node: node 0 (3 ranks) streams 14,528 bytes
  // a round per rank and node, node 1 (2 ranks) 21,824, node 2 (1 rank) 43,648.
  Cluster cluster(dir, 3, kSmallBuffers);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::vector<uint32_t> placement = {0, 1, 2, 0, 1, 0};  // 3, 2 and 1 ranks, interleaved
  // Rank 1 (node 1) sends rank 0 (node 0) 100,000 bytes a call: with its pairs to ranks 3 and
  // 5, 100,000 to 106,000 bytes, 5 slices of 21,824; the other streams hold at most 3 pairs of
  // 3,000 bytes, one slice. So 5 rounds a call, the first carrying the first slices.
  const uint32_t calls = 8;
  auto before = CountersOf(cluster);
  Ranks skewed = VectorJob(dir, ControlSockets(cluster), NodeNames(cluster), placement, "skewed3",
                           {"--calls", std::to_string(calls), "--max-bytes", "3000", "--seed", "11", "--skew-from",
                            "1", "--skew-to", "0", "--skew-bytes", "100000"});
  EXPECT_GT(AllPass(skewed), uint64_t{calls} * 100000);
  ExpectServedInRounds(cluster, before, skewed, placement, calls, 5 * calls);
  // Calls of random counts, call 3's up to 40,000 bytes a pair: calls that fit one round (one
  // put per other node and call), and one that goes in as many rounds as its longest stream
  // needs. Every node counts the same rounds, with one put per other node each.
  before = CountersOf(cluster);
  Ranks random = VectorJob(dir, ControlSockets(cluster), NodeNames(cluster), placement, "random3",
                           {"--calls", "6", "--max-bytes", "3000", "--seed", "13", "--large-call", "3",
                            "--large-bytes", "40000"});
  EXPECT_GT(AllPass(random), 0u);
  const uint64_t rounds = QueryCounters(cluster.node(0).admin_socket()).rounds() - before[0].rounds();
  EXPECT_GT(rounds, 6u + 1u) << "call 3 took more than 2 rounds";
  ExpectServedInRounds(cluster, before, random, placement, 6, rounds);
}

TEST(Alltoallv, AGroupSizedForSmallCallsGrowsAfterACallThatTookSeveralRounds) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // Buffers for 64-byte calls (a 4 KiB class); pairs of up to 20,000 bytes take several rounds
  // of them. The first call is served there, the group grows to the configured sizes after it,
  // and the calls after it fit one round each.
  const std::vector<uint32_t> placement = {0, 1, 1, 0, 1};
  Ranks ranks = VectorJob(dir, ControlSockets(cluster), NodeNames(cluster), placement, "grows",
                          {"--calls", "4", "--max-bytes", "20000", "--seed", "5", "--hint", "64"});
  EXPECT_GT(AllPass(ranks), 0u);
  for (uint32_t n = 0; n < 2; ++n) {
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    EXPECT_EQ(c.collectives_served(), 4u) << "node " << n;
    EXPECT_EQ(c.collectives_failed(), 0u) << "node " << n;
    EXPECT_GT(c.rounds(), 4u + 1u) << "node " << n << ": the first call in several rounds";
  }
}

TEST(Alltoallv, APairThatDisagreesAcrossNodesFailsEveryRankAlikeAndTheGroupGoesOn) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // Rank 1 (node 0) expects one byte more from rank 2 (node 1) in call 0. Between alltoallv
  // calls, an alltoall of 3 MiB per rank: announced rounds, after which an eager round waits
  // for the peers' ROUND_READY before their data (and their digest) come.
  const std::vector<uint32_t> placement = {0, 0, 1};
  Ranks ranks = VectorJob(dir, ControlSockets(cluster), NodeNames(cluster), placement, "mismatch",
                          {"--calls", "5", "--max-bytes", "500", "--mismatch-rank", "1", "--alltoall-bytes",
                           "3145728"});
  AllPass(ranks);
  ExpectPairNamedEverywhere(ranks, 2, 1);
  for (const auto& r : ranks) EXPECT_NE(r->Output().find("ok calls=5"), std::string::npos) << r->Output();
  for (uint32_t n = 0; n < 2; ++n) {
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    EXPECT_EQ(c.collectives_served(), 4u + 4u) << "4 alltoallv and 4 alltoall";
    EXPECT_EQ(c.collectives_failed(), 1u);
  }
}

TEST(Alltoallv, APairThatDisagreesInACallOfSeveralRoundsFailsItsFirstRoundOnEveryRank) {
  TempDir dir;
  Cluster cluster(dir, 2, kSmallBuffers);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // Every call 4 rounds, as in ASkewedCallAcrossTwoNodesGoesInSeveralRounds; in call 0 rank 3
  // (node 0) expects one byte more from rank 4 (node 1). The digest fails the call's first
  // round, which carried the first slice of node 0's part, on every rank: nothing was copied,
  // no stream round follows, and the calls after it are served.
  const uint32_t calls = 4;
  Ranks ranks = SkewedTwoNodeJob(dir, cluster, "mismatch-rounds", calls, {"--mismatch-rank", "3"});
  AllPass(ranks);
  ExpectPairNamedEverywhere(ranks, 4, 3);
  for (uint32_t n = 0; n < 2; ++n) {
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    EXPECT_EQ(c.collectives_served(), calls - 1) << "node " << n;
    EXPECT_EQ(c.collectives_failed(), 1u) << "node " << n;
    EXPECT_EQ(c.rounds(), kSkewedRounds * (calls - 1)) << "node " << n << ": the failed round is not counted";
    // The failed round's put, and the count tables after it.
    EXPECT_EQ(c.transport_counters().data_frames_sent(), kSkewedRounds * (calls - 1) + 2) << "node " << n;
    EXPECT_EQ(c.transport_counters().control_frames_sent(), 0u) << "node " << n;
  }
}

TEST(Alltoallv, TheFirstPairThatDisagreesAcrossThreeNodesIsNamedOnEveryRankOfEveryNode) {
  TempDir dir;
  Cluster cluster(dir, 3);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // 3, 2 and 1 ranks, interleaved. In call 0 rank 4 (node 1) expects one byte more from rank 5
  // (node 0), and rank 2 (node 2) one more from rank 3 (node 0): readers in group-rank order,
  // the pair every rank names is 3 -> 2, which no node could name from its own tables (node 0
  // sends, node 2 expects) nor from one peer's (node 1 sees neither end).
  const std::vector<uint32_t> placement = {0, 1, 2, 0, 1, 0};
  const auto before = CountersOf(cluster);
  Ranks ranks = VectorJob(dir, ControlSockets(cluster), NodeNames(cluster), placement, "first-pair",
                          {"--calls", "4", "--max-bytes", "500", "--seed", "6", "--mismatch-rank", "4",
                           "--mismatch-rank", "2"});
  AllPass(ranks);
  ExpectPairNamedEverywhere(ranks, 3, 2);
  for (const auto& r : ranks) EXPECT_NE(r->Output().find("ok calls=4"), std::string::npos) << r->Output();
  const auto after = CountersOf(cluster);
  // Payload only: the served calls' data and the failed call's (it left before the digests
  // were compared), never the count tables that named the pair.
  const auto sent = SumPerNode(ranks, placement, 3, "remote_sent_bytes");
  const auto received = SumPerNode(ranks, placement, 3, "remote_received_bytes");
  const auto failed_sent = SumPerNode(ranks, placement, 3, "failed_remote_sent_bytes");
  const auto failed_received = SumPerNode(ranks, placement, 3, "failed_remote_received_bytes");
  for (uint32_t n = 0; n < 3; ++n) {
    EXPECT_GT(failed_sent[n], 0u) << "node " << n;
    EXPECT_EQ(after[n].bytes_sent() - before[n].bytes_sent(), sent[n] + failed_sent[n]) << "node " << n;
    EXPECT_EQ(after[n].bytes_received() - before[n].bytes_received(), received[n] + failed_received[n])
        << "node " << n;
    EXPECT_EQ(after[n].collectives_served() - before[n].collectives_served(), 3u) << "node " << n;
    EXPECT_EQ(after[n].collectives_failed() - before[n].collectives_failed(), 1u) << "node " << n;
    // Every call one put per other node; the failed one, the count tables to each besides.
    EXPECT_EQ(after[n].transport_counters().data_frames_sent() - before[n].transport_counters().data_frames_sent(),
              2u * 4 + 2)
        << "node " << n;
    EXPECT_EQ(after[n].transport_counters().control_frames_sent() - before[n].transport_counters().control_frames_sent(),
              0u)
        << "node " << n;
  }
}

TEST(Alltoallv, CallsWithTheSameCountsAcrossNodesKeepTheirPlanAndCheckEveryCall) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // The daemons plan the first call and keep the plan while the counts stay (shm/plan/vector_plan.h,
  // VectorRoundPlan): new data every call, every byte checked, one put per other node and call
  // as an alltoall's.
  const std::vector<uint32_t> placement = {0, 1, 0, 1, 1};
  const uint32_t calls = 30;
  Ranks kept = VectorJob(dir, ControlSockets(cluster), NodeNames(cluster), placement, "kept",
                         {"--calls", std::to_string(calls), "--max-bytes", "3000", "--seed", "9", "--same-counts"});
  EXPECT_GT(AllPass(kept), 0u);
  const auto sent = SumPerNode(kept, placement, 2, "remote_sent_bytes");
  const auto received = SumPerNode(kept, placement, 2, "remote_received_bytes");
  const auto all = SumPerNode(kept, placement, 2, "verified_bytes");
  std::vector<admin::CountersReply> before;
  for (uint32_t n = 0; n < 2; ++n) {
    before.push_back(QueryCounters(cluster.node(n).admin_socket()));
    const admin::CountersReply& c = before.back();
    EXPECT_EQ(c.collectives_served(), calls) << "node " << n;
    EXPECT_EQ(c.collectives_failed(), 0u) << "node " << n;
    EXPECT_EQ(c.bytes_sent(), sent[n]) << "node " << n;
    EXPECT_EQ(c.bytes_received(), received[n]) << "node " << n;
    EXPECT_EQ(c.bytes_local(), all[n] - received[n]) << "node " << n;
    EXPECT_EQ(c.transport_counters().data_frames_sent(), calls) << "node " << n;
  }
  // A kept plan still checks the counts: rank 1 (node 1) expects one byte more from rank 2
  // (node 0) in call 0 only, so call 1 plans again and the calls after it keep that plan;
  // eager alltoalls of another size run between the calls.
  Ranks mismatch = VectorJob(dir, ControlSockets(cluster), NodeNames(cluster), placement, "kept-mismatch",
                             {"--calls", "6", "--max-bytes", "500", "--seed", "4", "--same-counts", "--mismatch-rank",
                              "1", "--alltoall-bytes", "64"});
  AllPass(mismatch);
  ExpectPairNamedEverywhere(mismatch, 2, 1);
  for (const auto& r : mismatch) EXPECT_NE(r->Output().find("ok calls=6"), std::string::npos) << r->Output();
  for (uint32_t n = 0; n < 2; ++n) {
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    EXPECT_EQ(c.collectives_served() - before[n].collectives_served(), 5u + 5u) << "5 alltoallv and 5 alltoall";
    EXPECT_EQ(c.collectives_failed() - before[n].collectives_failed(), 1u);
    // The failed call's data went too (its digest rides in the header), then its count tables:
    // 6 + 1 + 5 puts.
    EXPECT_EQ(c.transport_counters().data_frames_sent() - before[n].transport_counters().data_frames_sent(), 12u)
        << "node " << n;
  }
}

// Alltoallv as a hypercube (shm/plan/vector_cube.h), where the default inter-node table runs blocks up to
// 8 KiB as one: 4 nodes x 2 ranks interleaved (a power of two: XOR pairing), 6 x 1 and 5 nodes of
// 2, 1, 2, 1 and 1 ranks (the rotation).
class AlltoallvCube : public ::testing::TestWithParam<std::vector<uint32_t>> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.Start()) << cluster_.Logs();
    before_ = CountersOf(cluster_);
  }
  const std::vector<uint32_t>& placement() const { return GetParam(); }
  static uint32_t NodesOf(const std::vector<uint32_t>& placement) {
    return *std::max_element(placement.begin(), placement.end()) + 1;
  }
  uint32_t nodes() const { return NodesOf(placement()); }
  uint32_t size() const { return static_cast<uint32_t>(placement().size()); }
  // Messages a node sends per call: as a hypercube, and pairwise.
  uint64_t cube() const { return BruckRounds(nodes()); }
  uint64_t pairwise() const { return nodes() - 1; }
  Ranks Job(const std::string& name, const std::vector<std::string>& args) {
    return VectorJob(dir_, ControlSockets(cluster_), NodeNames(cluster_), placement(), name, args);
  }
  // What the job added to every node's counters: `calls` served and `failed` failed, `rounds`
  // rounds, `frames` data frames sent and received, no control frame.
  void ExpectCounted(uint64_t calls, uint64_t failed, uint64_t rounds, uint64_t frames) {
    const auto after = CountersOf(cluster_);
    for (uint32_t n = 0; n < nodes(); ++n) {
      SCOPED_TRACE("node " + std::to_string(n));
      const admin::CountersReply& a = after[n];
      const admin::CountersReply& b = before_[n];
      EXPECT_EQ(a.collectives_served() - b.collectives_served(), calls);
      EXPECT_EQ(a.collectives_failed() - b.collectives_failed(), failed);
      EXPECT_EQ(a.rounds() - b.rounds(), rounds);
      const auto& at = a.transport_counters();
      const auto& bt = b.transport_counters();
      EXPECT_EQ(at.data_frames_sent() - bt.data_frames_sent(), frames);
      EXPECT_EQ(at.data_frames_received() - bt.data_frames_received(), frames);
      EXPECT_EQ(at.control_frames_sent() - bt.control_frames_sent(), 0u);
      EXPECT_EQ(a.data_connections(), nodes() - 1);
    }
  }
  TempDir dir_;
  Cluster cluster_{dir_, NodesOf(GetParam())};
  std::vector<admin::CountersReply> before_;
};

INSTANTIATE_TEST_SUITE_P(Shapes, AlltoallvCube,
                         ::testing::Values(std::vector<uint32_t>{0, 1, 2, 3, 0, 1, 2, 3},
                                           std::vector<uint32_t>{0, 1, 2, 3, 4, 5},
                                           std::vector<uint32_t>{0, 1, 2, 3, 4, 0, 2}),
                         [](const auto& info) { return "shape" + std::to_string(info.index); });

TEST_P(AlltoallvCube, RandomCountsGoAsCeilLog2NMessagesANode) {
  const uint32_t calls = 10;
  // Pairs of up to 500 bytes, a quarter of them none: blocks of at most 2,000 bytes.
  Ranks ranks = Job("cube", {"--calls", std::to_string(calls), "--max-bytes", "500", "--seed", "21"});
  EXPECT_GT(AllPass(ranks), 0u);
  // ceil(log2 N) messages per node and call (2 at 4 nodes, 3 at 5 and 6) instead of N - 1, each
  // call one round.
  ExpectCounted(calls, 0, calls, cube() * calls);
  // Payload: every node's blocks, and those it forwards (received in an earlier message), never
  // the sizes' tables; what the node's own ranks send each other stays on the node.
  const auto sent = SumPerNode(ranks, placement(), nodes(), "remote_sent_bytes");
  const auto received = SumPerNode(ranks, placement(), nodes(), "remote_received_bytes");
  const auto all = SumPerNode(ranks, placement(), nodes(), "verified_bytes");
  const auto after = CountersOf(cluster_);
  uint64_t wire_sent = 0, wire_received = 0, forwarded = 0;
  for (uint32_t n = 0; n < nodes(); ++n) {
    const uint64_t node_sent = after[n].bytes_sent() - before_[n].bytes_sent();
    const uint64_t node_received = after[n].bytes_received() - before_[n].bytes_received();
    EXPECT_EQ(node_received - received[n], node_sent - sent[n]) << "node " << n << " receives what it forwards";
    EXPECT_EQ(after[n].bytes_local() - before_[n].bytes_local(), all[n] - received[n]) << "node " << n;
    wire_sent += node_sent;
    wire_received += node_received;
    forwarded += node_sent - sent[n];
  }
  EXPECT_EQ(wire_sent, wire_received);
  EXPECT_GT(forwarded, 0u);
}

TEST_P(AlltoallvCube, ABlockOverTheHypercubesCapGoesAgainPairwiseAndEveryNodeChoosesTheNextCallsAlike) {
  // Call 2 draws pairs of up to 20,000 bytes, blocks far over the 8 KiB the hypercube carries:
  // - calls 0 and 1: hypercube;
  // - call 2: the hypercube's messages carry headers only once a node finds its part too large,
  //   every node learns that from the sums, and the call goes again pairwise: 2 rounds;
  // - call 3: pairwise, since call 2's nodes said their parts were too large for a hypercube;
  //   its parts fit one, and every node saw every node say so;
  // - calls 4 and 5: hypercube again.
  Ranks ranks = Job("cap", {"--calls", "6", "--max-bytes", "400", "--seed", "3", "--large-call", "2", "--large-bytes",
                            "20000"});
  EXPECT_GT(AllPass(ranks), 0u);
  ExpectCounted(6, 0, 1 + 1 + 2 + 1 + 1 + 1, cube() * 2 + (cube() + pairwise()) + pairwise() + cube() * 2);
}

TEST_P(AlltoallvCube, APairThatDisagreesIsNamedOnEveryRankOnceTheHypercubeSentTheCallBack) {
  // In call 0 rank size-3 expects one byte more from rank size-2, on another node. The
  // hypercube's sums say the digests disagree; the call goes again pairwise, which names the
  // pair from the count tables (a put of them to each other node) and fails on every rank. Call
  // 1 runs pairwise (the failed call's flags count for nothing) and says every part fits: calls
  // 2 to 4 run as a hypercube.
  const uint32_t reader = size() - 3;
  ASSERT_NE(placement()[reader], placement()[reader + 1]);
  Ranks ranks = Job("cube-mismatch",
                    {"--calls", "5", "--max-bytes", "500", "--seed", "8", "--mismatch-rank", std::to_string(reader)});
  AllPass(ranks);
  ExpectPairNamedEverywhere(ranks, reader + 1, reader);
  for (const auto& r : ranks) EXPECT_NE(r->Output().find("ok calls=5"), std::string::npos) << r->Output();
  // The failed call: its hypercube's messages, then pairwise ones and a put of tables to each
  // other node; its hypercube round completed (it sent the call back), its pairwise round failed
  // and is not counted.
  ExpectCounted(4, 1, 1 + 1 + 1 + 1 + 1, (cube() + 2 * pairwise()) + pairwise() + cube() * 3);
}

TEST_P(AlltoallvCube, AlltoallAndAlltoallvCallsTakeTurnsAsHypercubes) {
  // Every rank runs an alltoall of 64 bytes between its alltoallv calls: the two kinds follow
  // each other as hypercubes in the same inboxes, laid with size tables for the alltoallv and
  // without for the alltoall, every byte checked.
  Ranks ranks = Job("cube-mixed", {"--calls", "5", "--max-bytes", "300", "--seed", "14", "--alltoall-bytes", "64"});
  EXPECT_GT(AllPass(ranks), 0u);
  // 5 alltoallv and 4 alltoall calls, all hypercubes.
  ExpectCounted(5 + 4, 0, 9, cube() * 9);
}

}  // namespace
}  // namespace ohio::testing
