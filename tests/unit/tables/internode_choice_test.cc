// The inter-node table: its text form (errors name the line), the choice following it at the edges
// of its rows, and the digest the nodes of a group compare at setup.
#include <gtest/gtest.h>

#include "shm/plan/group_shape.h"
#include "shm/tables/internode_choice.h"
#include "shm/tables/internode_table_text.h"

namespace ohio {
namespace {

GroupShape Shape(uint32_t nodes, uint32_t ppn) {
  std::vector<uint32_t> rank_node;
  for (uint32_t n = 0; n < nodes; ++n) rank_node.insert(rank_node.end(), ppn, n);
  return GroupShape::Make(nodes, rank_node).value();
}

InterNodeTable Parse(const std::string& text) {
  auto t = ParseInterNodeTable(text, "t");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? t.value() : InterNodeTable{};
}

std::string Error(const std::string& text) {
  auto t = ParseInterNodeTable(text, "/etc/ohio/internode.table");
  return t.ok() ? "parsed" : t.status().message();
}

TEST(InterNodeTableText, ParsesRowsCommentsAndUnits) {
  const InterNodeTable t = Parse(
      "# nodes  max-block  algorithm\n"
      "\n"
      "4+   1KiB   hypercube   # tiny blocks\n"
      "  2-8 65536 pairwise\n"
      "16 2MiB direct\n"
      "2+ any direct\n");
  ASSERT_EQ(t.rules.size(), 4u);
  EXPECT_EQ(t.rules[0].min_nodes, 4u);
  EXPECT_EQ(t.rules[0].max_nodes, UINT32_MAX);
  EXPECT_EQ(t.rules[0].max_block_bytes, 1024u);
  EXPECT_EQ(t.rules[0].internode, InterNodeAlgorithm::kHypercube);
  EXPECT_EQ(t.rules[1].min_nodes, 2u);
  EXPECT_EQ(t.rules[1].max_nodes, 8u);
  EXPECT_EQ(t.rules[1].max_block_bytes, 65536u);
  EXPECT_EQ(t.rules[1].internode, InterNodeAlgorithm::kPairwise);
  EXPECT_EQ(t.rules[2].min_nodes, 16u);
  EXPECT_EQ(t.rules[2].max_nodes, 16u);
  EXPECT_EQ(t.rules[2].max_block_bytes, 2u << 20);
  EXPECT_EQ(t.rules[3].max_block_bytes, UINT64_MAX);
  EXPECT_EQ(FormatInterNodeTable(t), "4+ 1KiB hypercube\n2-8 64KiB pairwise\n16 2MiB direct\n2+ any direct\n");
  EXPECT_TRUE(Parse("# only comments\n\n").rules.empty());
}

TEST(InterNodeTableText, ErrorsNameTheLineAndWhatIsWrong) {
  EXPECT_EQ(Error("4+ 1KiB hypercube\n\n4+ 1KiB bruck\n"),
            "inter-node table /etc/ohio/internode.table:3: unknown inter-node algorithm 'bruck' (pairwise, hypercube or direct)");
  EXPECT_EQ(Error("4+ 1KiB\n"),
            "inter-node table /etc/ohio/internode.table:1: expected 'nodes max-block algorithm' (e.g. '4+ 1KiB hypercube'), "
            "got 2 words");
  EXPECT_EQ(Error("# c\n1+ 1KiB direct\n"),
            "inter-node table /etc/ohio/internode.table:2: expected nodes as N, N-M, N+ or any (N >= 2), got '1+'");
  EXPECT_EQ(Error("8-4 1KiB direct\n"), "inter-node table /etc/ohio/internode.table:1: the nodes range 8-4 is empty");
  EXPECT_EQ(Error("x 1KiB direct\n"),
            "inter-node table /etc/ohio/internode.table:1: expected nodes as N, N-M, N+ or any (N >= 2), got 'x'");
  EXPECT_EQ(Error("4 1kb direct\n"),
            "inter-node table /etc/ohio/internode.table:1: expected max-block as bytes (e.g. 4096 or 4KiB) or 'any', got "
            "'1kb'");
  EXPECT_EQ(Error("4 -1 direct\n"),
            "inter-node table /etc/ohio/internode.table:1: expected max-block as bytes (e.g. 4096 or 4KiB) or 'any', got "
            "'-1'");
  // 2^24 TiB does not fit in 64 bits.
  EXPECT_EQ(Error("4 16777216TiB direct\n"),
            "inter-node table /etc/ohio/internode.table:1: expected max-block as bytes (e.g. 4096 or 4KiB) or 'any', got "
            "'16777216TiB'");
}

// A row ohio-sim proposed ends with the marker: it decides as any row, keeps the marker through
// the canonical form (and so the digest), and a fourth word that is not the marker is refused.
TEST(InterNodeTableText, SimulatedRowsCarryTheirMarker) {
  const InterNodeTable t = Parse("# measured\n4-16 1KiB hypercube\n64+ 4KiB hypercube simulated\n");
  ASSERT_EQ(t.rules.size(), 2u);
  EXPECT_FALSE(t.rules[0].simulated);
  EXPECT_TRUE(t.rules[1].simulated);
  EXPECT_EQ(t.rules[1].min_nodes, 64u);
  EXPECT_EQ(t.rules[1].max_block_bytes, 4096u);
  EXPECT_EQ(FormatInterNodeTable(t), "4-16 1KiB hypercube\n64+ 4KiB hypercube simulated\n");
  EXPECT_EQ(FormatInterNodeTable(Parse(FormatInterNodeTable(t))), FormatInterNodeTable(t));
  EXPECT_NE(InterNodeTableDigest(t), InterNodeTableDigest(Parse("4-16 1KiB hypercube\n64+ 4KiB hypercube\n")));
  EXPECT_EQ(Error("4+ 1KiB hypercube\n64+ 4KiB hypercube simulate\n"),
            "inter-node table /etc/ohio/internode.table:2: expected 'simulated' after the 3 columns (the marker of a "
            "row ohio-sim proposed), got 'simulate'");
  EXPECT_EQ(Error("64+ 4KiB hypercube simulated simulated\n"),
            "inter-node table /etc/ohio/internode.table:1: expected 'nodes max-block algorithm' (e.g. '4+ 1KiB "
            "hypercube'), got 5 words");
}

TEST(InterNodeChoice, FollowsTheFirstMatchingRowAtItsBoundaries) {
  const InterNodeTable t = Parse("4-16 1KiB hypercube\n2+ 64KiB pairwise\n2+ any direct\n");
  // ppn 2: the block is 4 x M.
  EXPECT_EQ(ChooseInterNodeAlgorithm(t, Shape(4, 2), 256), InterNodeAlgorithm::kHypercube);    // block 1024: the edge, in
  EXPECT_EQ(ChooseInterNodeAlgorithm(t, Shape(4, 2), 257), InterNodeAlgorithm::kPairwise);     // 1028: past it
  EXPECT_EQ(ChooseInterNodeAlgorithm(t, Shape(3, 2), 1), InterNodeAlgorithm::kPairwise);       // below min nodes
  EXPECT_EQ(ChooseInterNodeAlgorithm(t, Shape(16, 1), 1024), InterNodeAlgorithm::kHypercube);  // max nodes, in
  EXPECT_EQ(ChooseInterNodeAlgorithm(t, Shape(17, 1), 1), InterNodeAlgorithm::kPairwise);      // past max nodes
  EXPECT_EQ(ChooseInterNodeAlgorithm(t, Shape(2, 2), 16384), InterNodeAlgorithm::kPairwise);   // 65536: the edge
  EXPECT_EQ(ChooseInterNodeAlgorithm(t, Shape(2, 2), 16385), InterNodeAlgorithm::kDirect);
  EXPECT_EQ(MatchingInterNodeRule(t, 4, 1024), 0);
  EXPECT_EQ(MatchingInterNodeRule(t, 4, 1025), 1);
  EXPECT_EQ(MatchingInterNodeRule(t, 2, UINT64_MAX), 2);
  EXPECT_EQ(MatchingInterNodeRule(InterNodeTable{}, 4, 0), -1);
  EXPECT_EQ(ChooseInterNodeAlgorithm(InterNodeTable{}, Shape(4, 1), 1), InterNodeAlgorithm::kPairwise);  // no row: pairwise
  // The block is M x max ppn squared, whatever the other nodes hold.
  auto uneven = GroupShape::Make(4, {0, 0, 0, 1, 2, 3}).value();
  EXPECT_EQ(InterNodeBlockBytes(uneven, 100), 900u);
  EXPECT_EQ(ChooseInterNodeAlgorithm(t, uneven, 113), InterNodeAlgorithm::kHypercube);  // 1017
  EXPECT_EQ(ChooseInterNodeAlgorithm(t, uneven, 114), InterNodeAlgorithm::kPairwise);   // 1026
}

TEST(InterNodeChoice, ForcedTableChoosesItsInterNodeForEveryCall) {
  const InterNodeTable t = ForcedInterNodeTable(InterNodeAlgorithm::kDirect);
  EXPECT_EQ(ChooseInterNodeAlgorithm(t, Shape(2, 1), 0), InterNodeAlgorithm::kDirect);
  EXPECT_EQ(ChooseInterNodeAlgorithm(t, Shape(1000, 56), 1u << 30), InterNodeAlgorithm::kDirect);
  EXPECT_EQ(FormatInterNodeTable(t), "2+ any direct\n");
}

TEST(InterNodeTableDigest, SameRowsSameDigestWhateverTheSpelling) {
  const std::string a = InterNodeTableDigest(Parse("4+ 1KiB hypercube\n"));
  EXPECT_EQ(a.size(), 16u);
  EXPECT_EQ(a, InterNodeTableDigest(Parse("# measured\n  4+\t1024  hypercube  # same row\n")));
  EXPECT_EQ(InterNodeTableDigest(Parse("32+ 16KiB hypercube\n4+ 8KiB hypercube\n")), InterNodeTableDigest(DefaultInterNodeTable()));
  EXPECT_NE(a, InterNodeTableDigest(Parse("4+ 2KiB hypercube\n")));
  EXPECT_NE(a, InterNodeTableDigest(Parse("5+ 1KiB hypercube\n")));
  EXPECT_NE(a, InterNodeTableDigest(Parse("4+ 1KiB direct\n")));
  // Order matters: the first matching row wins.
  EXPECT_NE(InterNodeTableDigest(Parse("4+ 1KiB hypercube\n2+ any direct\n")),
            InterNodeTableDigest(Parse("2+ any direct\n4+ 1KiB hypercube\n")));
  EXPECT_NE(a, InterNodeTableDigest(InterNodeTable{}));
}

}  // namespace
}  // namespace ohio
