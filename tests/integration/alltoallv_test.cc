// ohio_alltoallv through real daemons and real rank processes, on one node
// (client/local_alltoallv.cc) and across nodes (client/remote_alltoallv.cc): counts drawn per
// pair and call with zeros among them, blocks out of order with gaps, every byte and every gap
// checked by the rank tool; on one node, small rows staged through the SSB with the ranks
// meeting once (no read in place, no wait for readers in the stage report), large rows read in
// place, both in one call; a pair whose counts disagree fails the call on every rank with the
// same message and the group goes on; a call across nodes too large for one round is "not
// supported" on every rank alike and the group goes on; the daemons count the calls and their
// bytes exactly, on the wire only the non-zero pairs' bytes.
#include <gtest/gtest.h>

#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/stage_lines.h"

namespace ohio::testing {
namespace {

using std::chrono::seconds;

constexpr auto kDeadline = seconds(90);

// What every rank of every node gets when a pair across nodes disagrees (the digest's verdict).
constexpr char kCountsDisagree[] =
    "ranks disagree on the counts of this alltoallv: some rank sends another a number of bytes it does not expect "
    "(MPI's rule: sendcounts[j] on rank i equals recvcounts[i] on rank j)";

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

TEST(Alltoallv, RandomCountsAcrossThreeNodesWithUnevenPlacement) {
  TempDir dir;
  // Small buffers: a slot of 64 KiB per source node, a 42 KiB region of SSB half per rank on
  // the node of three, so that call 7's counts of up to 40,000 bytes do not fit one round.
  Cluster cluster(dir, 3, {"--ssb-bytes", "256KiB", "--srb-bytes", "256KiB"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::vector<uint32_t> placement = {0, 1, 2, 0, 1, 0};  // 3, 2 and 1 ranks, interleaved
  const uint32_t calls = 16;
  Ranks ranks = VectorJob(dir, ControlSockets(cluster), NodeNames(cluster), placement, "across",
                          {"--calls", std::to_string(calls), "--max-bytes", "3000", "--seed", "11", "--large-call",
                           "7", "--large-bytes", "40000", "--large-expect", "not supported"});
  const uint64_t verified = AllPass(ranks);
  EXPECT_GT(verified, 0u);
  const std::string why = SameErrorEverywhere(ranks, 7, "11 \\(not supported\\)");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(why, m,
                               std::regex("alltoallv across nodes is served when it fits one round of the group's "
                                          "shared buffers; the part of nodes? ([^ ]+) does not")))
      << why;
  const std::string too_large = "," + std::string(m[1]) + ",";
  const auto sent = SumPerNode(ranks, placement, 3, "remote_sent_bytes");
  const auto received = SumPerNode(ranks, placement, 3, "remote_received_bytes");
  const auto all = SumPerNode(ranks, placement, 3, "verified_bytes");
  for (uint32_t n = 0; n < 3; ++n) {
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    // On the wire, exactly the bytes of the non-zero pairs between nodes (headers aside).
    EXPECT_EQ(c.bytes_sent(), sent[n]) << "node " << n;
    EXPECT_EQ(c.bytes_received(), received[n]) << "node " << n;
    EXPECT_EQ(c.bytes_local(), all[n] - received[n]) << "node " << n;
    EXPECT_EQ(c.collectives_served(), calls - 1) << "node " << n;
    EXPECT_EQ(c.collectives_failed(), 1u) << "node " << n;
    // One put per other node and call, whatever the counts of its ranks' pairs; a node whose
    // part of call 7 did not fit sent none for it.
    const bool sent_none = too_large.find("," + cluster.name(n) + ",") != std::string::npos;
    EXPECT_EQ(c.transport_counters().data_frames_sent(), 2 * (calls - (sent_none ? 1 : 0))) << "node " << n;
  }
}

TEST(Alltoallv, AGroupSizedForSmallCallsGrowsForALargerOneAcrossNodes) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // Buffers for 64-byte calls (a 4 KiB class); pairs of up to 20,000 bytes do not fit them.
  const std::vector<uint32_t> placement = {0, 1, 1, 0, 1};
  Ranks ranks = VectorJob(dir, ControlSockets(cluster), NodeNames(cluster), placement, "grows",
                          {"--calls", "4", "--max-bytes", "20000", "--seed", "5", "--hint", "64"});
  EXPECT_GT(AllPass(ranks), 0u);
  for (uint32_t n = 0; n < 2; ++n) {
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    EXPECT_EQ(c.collectives_served(), 4u) << "node " << n;
    EXPECT_EQ(c.collectives_failed(), 1u) << "node " << n << ": the first try, on the small buffers";
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
  EXPECT_EQ(SameErrorEverywhere(ranks, 0, "6 \\(size mismatch\\)"), kCountsDisagree);
  for (const auto& r : ranks) EXPECT_NE(r->Output().find("ok calls=5"), std::string::npos) << r->Output();
  for (uint32_t n = 0; n < 2; ++n) {
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    EXPECT_EQ(c.collectives_served(), 4u + 4u) << "4 alltoallv and 4 alltoall";
    EXPECT_EQ(c.collectives_failed(), 1u);
  }
}

TEST(Alltoallv, CallsWithTheSameCountsAcrossNodesKeepTheirPlanAndCheckEveryCall) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // The daemons plan the first call and keep the plan while the counts stay (shm/vector_plan.h,
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
  EXPECT_EQ(SameErrorEverywhere(mismatch, 0, "6 \\(size mismatch\\)"), kCountsDisagree);
  for (const auto& r : mismatch) EXPECT_NE(r->Output().find("ok calls=6"), std::string::npos) << r->Output();
  for (uint32_t n = 0; n < 2; ++n) {
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    EXPECT_EQ(c.collectives_served() - before[n].collectives_served(), 5u + 5u) << "5 alltoallv and 5 alltoall";
    EXPECT_EQ(c.collectives_failed() - before[n].collectives_failed(), 1u);
    // The failed call's data went too (its digest rides in the header): 6 + 5 puts.
    EXPECT_EQ(c.transport_counters().data_frames_sent() - before[n].transport_counters().data_frames_sent(), 11u)
        << "node " << n;
  }
}

}  // namespace
}  // namespace ohio::testing
