// ohio_alltoallv (client/local_alltoallv.cc) through a real daemon and real rank processes:
// counts drawn per pair and call with zeros among them, blocks out of order with gaps, every
// byte and every gap checked by the rank tool; a pair whose counts disagree fails the call on
// every rank with the same message and the group goes on; the daemon counts the calls and their
// bytes exactly; a group spanning nodes gets "not supported" on every rank, nothing moved.
#include <gtest/gtest.h>

#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"

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

TEST(Alltoallv, APairThatDisagreesFailsEveryRankAlikeAndTheGroupGoesOn) {
  TempDir dir;
  Daemon daemon(dir, {});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  // Rank 1 expects one byte more from rank 2 in call 0; calls 1-4 are verified as usual.
  Ranks ranks = OneNodeJob(dir, daemon, NodeName(daemon), 3, "mismatch",
                           {"--calls", "5", "--max-bytes", "500", "--mismatch-rank", "1"});
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
  const admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(c.collectives_served(), 4u);
  EXPECT_EQ(c.collectives_failed(), 1u);
}

TEST(Alltoallv, AGroupAcrossNodesIsNotSupportedOnEveryRank) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  Ranks ranks = VectorJob(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 2), "across",
                          {"--calls", "2", "--expect", "not supported"});
  AllPass(ranks);
  for (const auto& r : ranks) {
    EXPECT_NE(r->Output().find("alltoallv is served for groups on one node; this group spans 2 nodes"),
              std::string::npos)
        << r->Output();
  }
}

}  // namespace
}  // namespace ohio::testing
