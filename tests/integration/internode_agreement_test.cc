// The inter-node table at group setup, with real daemons: a node whose table differs from the
// others' refuses the group on every node and every rank is told which nodes run which table,
// while a group on the same nodes whose ranks force one algorithm (OHIO_INTERNODE_ALGORITHM) runs, before and
// after, untouched.
#include <gtest/gtest.h>

#include <fstream>

#include "shm/tables/internode_choice.h"
#include "shm/tables/internode_table_text.h"
#include "tests/harness/cluster.h"
#include "tests/harness/rank_job.h"
#include "tests/harness/wait_until.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(120);

bool Contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

const admin::GroupSummary* FindGroup(const admin::StatusReply& reply, const std::string& key) {
  for (const auto& g : reply.group()) {
    if (g.key() == key) return &g;
  }
  return nullptr;
}

TEST(InterNodeAgreement, NodeWithAnotherTableRefusesTheGroupOnEveryRank) {
  TempDir dir;
  const std::string table = dir.file("n1-internode.table");
  std::ofstream(table) << "# n1 alone measured direct for everything\n2+ any direct\n";
  Cluster cluster(dir, 2);
  cluster.AddFlags(1, {"--internode-table", table});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();

  // The job forces pairwise for every call: both nodes then run the same one-row table.
  setenv("OHIO_INTERNODE_ALGORITHM", "pairwise", 1);  // inherited by the rank processes
  RankJob forced(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 2), "forced",
                 {"--bytes", "1", "4096", "--iterations", "20", "--stall-after"});
  unsetenv("OHIO_INTERNODE_ALGORITHM");
  for (uint32_t r = 0; r < forced.size(); ++r) {
    ASSERT_TRUE(forced.rank(r).WaitForOutput("stalling", kDeadline)) << forced.Outputs() << cluster.Logs();
    EXPECT_TRUE(Contains(forced.rank(r).Output(), "ok bytes=4096 iterations=20")) << forced.rank(r).Output();
  }
  const std::string forced_digest = InterNodeTableDigest(ForcedInterNodeTable(InterNodeAlgorithm::kPairwise));
  uint64_t forced_rounds[2] = {};
  for (uint32_t i = 0; i < 2; ++i) {
    // A rank's call ends when its last block lands; its daemon counts the round a moment later.
    StatusQuery q;
    const admin::GroupSummary* g = nullptr;
    WaitUntil(
        [&] {
          q = QueryStatus(cluster.node(i).admin_socket());
          g = q.ok ? FindGroup(q.reply, KeyHex("forced")) : nullptr;
          return g != nullptr && g->sequence() >= 40u;
        },
        std::chrono::seconds(10));
    ASSERT_TRUE(q.ok) << q.error;
    ASSERT_NE(g, nullptr) << q.reply.DebugString();
    EXPECT_EQ(g->internode(), "OHIO_INTERNODE_ALGORITHM=pairwise of the job's ranks");
    EXPECT_EQ(g->internode_digest(), forced_digest);
    forced_rounds[i] = g->sequence();
    EXPECT_GE(forced_rounds[i], 40u);
  }

  // Without OHIO_INTERNODE_ALGORITHM each node runs its own table: n0 the built-in one, n1 its file's.
  RankJob plain(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 2), "plain",
                {"--bytes", "8", "--expect", "group failed"});
  const std::string why =
      "the nodes of group " + KeyHex("plain") + " choose inter-node algorithms differently, node n0 by the built-in table " +
      "(digest " + InterNodeTableDigest(DefaultInterNodeTable()) + "), node n1 by the table " + table + " (digest " +
      InterNodeTableDigest(ForcedInterNodeTable(InterNodeAlgorithm::kDirect)) +
      "): every node of a group needs the same internode-table and internode-algorithm settings (or the job sets OHIO_INTERNODE_ALGORITHM)";
  const std::vector<int> codes = plain.Wait(kDeadline);
  for (uint32_t r = 0; r < plain.size(); ++r) {
    const std::string out = plain.rank(r).Output();
    EXPECT_EQ(codes[r], 0) << out << cluster.Logs();
    // Either node may find the disagreement first; a rank is told at its first call, or at its
    // join when its node had failed the group already.
    EXPECT_TRUE(ToldGroupFailed(out, KeyHex("plain"), why, NodeNames(cluster))) << "rank " << r << ": " << out;
  }

  // The forced group is untouched: both nodes still hold it open, at the rounds it had done.
  for (uint32_t i = 0; i < 2; ++i) {
    StatusQuery q = QueryStatus(cluster.node(i).admin_socket());
    ASSERT_TRUE(q.ok) << q.error;
    const admin::GroupSummary* g = FindGroup(q.reply, KeyHex("forced"));
    ASSERT_NE(g, nullptr) << q.reply.DebugString();
    EXPECT_EQ(g->state(), "open") << cluster.name(i);
    EXPECT_EQ(g->sequence(), forced_rounds[i]) << cluster.name(i);
  }
  // And a new group of the same nodes whose job forces the same inter-node algorithm everywhere runs.
  setenv("OHIO_INTERNODE_ALGORITHM", "pairwise", 1);
  RankJob after(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 2), "after",
                {"--bytes", "1", "65536", "--iterations", "5"});
  unsetenv("OHIO_INTERNODE_ALGORITHM");
  const std::vector<int> after_codes = after.Wait(kDeadline);
  for (uint32_t r = 0; r < after.size(); ++r) {
    EXPECT_EQ(after_codes[r], 0) << after.Outputs() << cluster.Logs();
    EXPECT_TRUE(Contains(after.rank(r).Output(), "ok bytes=65536 iterations=5")) << after.rank(r).Output();
  }
}

// OHIO_INTERNODE_ALGORITHM reaches the daemon in each rank's join: the ranks of one node must agree, and a
// value the daemon does not know is refused at the join.
TEST(InterNodeAgreement, RanksOfANodeThatDisagreeOnOhioInterNodeAreRefusedAtTheirJoin) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  auto rank = [&](const std::string& key, uint32_t r, const std::string& internode, const std::vector<std::string>& more) {
    std::vector<std::string> argv = {"/usr/bin/env", "OHIO_INTERNODE_ALGORITHM=" + internode, RunfilePath(RankJob::kAlltoallRank),
                                     "--socket", cluster.node(0).socket(), "--key", KeyHex(key), "--size", "4", "--rank",
                                     std::to_string(r), "--nodes", "n0", "n1", "--rank-node", "0", "0", "1", "1",
                                     "--bytes", "8"};
    argv.insert(argv.end(), more.begin(), more.end());
    return std::make_unique<Process>(argv, dir.file(key + "-rank" + std::to_string(r) + ".out"));
  };
  // Rank 0 joins first and holds the group; rank 1 asks for another inter-node algorithm.
  auto first = rank("split", 0, "direct", {"--stall"});
  ASSERT_TRUE(first->WaitForOutput("joined", kDeadline)) << first->Output() << cluster.Logs();
  auto second = rank("split", 1, "", {"--expect", "refused"});
  EXPECT_EQ(second->Wait(kDeadline), 0) << second->Output();
  EXPECT_TRUE(Contains(second->Output(), "join error code=4 (refused) rank 1 asks for inter-node algorithm auto (the daemons' "
                                         "table) but the ranks that joined before asked for direct (OHIO_INTERNODE_ALGORITHM)"))
      << second->Output();

  auto unknown = rank("unknown", 0, "bruck", {"--expect", "invalid argument"});
  EXPECT_EQ(unknown->Wait(kDeadline), 0) << unknown->Output();
  EXPECT_TRUE(Contains(unknown->Output(), "unknown inter-node algorithm 'bruck' (auto, pairwise, hypercube or direct)"))
      << unknown->Output();
}

}  // namespace
}  // namespace ohio::testing
