// Naming the first pair whose alltoallv counts disagree across nodes (shm/plan/vector_disagreement.h):
// every node reads its own ranks' tables and the tables its peers put in their slots, laid out
// as each node's segment holds them; for every placement of up to 6 ranks on up to 3 nodes,
// every node finds the pair a single node holding every table would (the one-node order), and
// the text names it. Whether a group's slots hold the tables is the same answer for every node.
#include "shm/plan/vector_disagreement.h"

#include <gtest/gtest.h>

#include <vector>

#include "common/mix64.h"
#include "shm/plan/exchange_plan.h"
#include "tests/unit/plan/rank_maps.h"

namespace ohio {
namespace {

using testing_util::AllValidMaps;
using testing_util::MapName;

// Every rank's table by group rank, the pairs agreeing: rank a sends rank b Count(a, b).
std::vector<std::vector<CountEntry>> AgreeingTables(uint32_t ranks, uint64_t seed) {
  const auto count = [&](uint32_t a, uint32_t b) { return Mix64(seed ^ (uint64_t{a} << 20 | b)) % 3 * 100; };
  std::vector<std::vector<CountEntry>> t(ranks, std::vector<CountEntry>(ranks));
  for (uint32_t a = 0; a < ranks; ++a) {
    for (uint32_t b = 0; b < ranks; ++b) t[a][b] = {count(a, b), 0, count(b, a)};
  }
  return t;
}

// Node n's tables as its segment holds them: its ranks' in local rank order.
std::vector<CountEntry> NodeTables(const GroupShape& shape, const std::vector<std::vector<CountEntry>>& t, uint32_t n) {
  std::vector<CountEntry> out;
  for (uint32_t l = 0; l < shape.ppn(n); ++l) {
    const auto& row = t[shape.rank_at(n, l)];
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

TEST(VectorDisagreement, EveryNodeNamesThePairOneNodeWithEveryTableWould) {
  uint32_t checked = 0;
  for (const auto& m : AllValidMaps(6, 3)) {
    if (m.nodes < 2) continue;
    Result<GroupShape> made = GroupShape::Make(m.nodes, m.rank_node);
    ASSERT_TRUE(made.ok());
    const GroupShape& shape = made.value();
    const uint32_t size = shape.size();
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      auto t = AgreeingTables(size, seed);
      // Two pairs disagree: the later reader's first, so that order, not discovery, decides.
      const uint32_t late = size - 1, early = size / 2;
      t[late][(late + 1) % size].recv_bytes += 1;
      t[(early + 2) % size][early].bytes += 5;
      VectorDisagreement want{};
      for (uint32_t r = 0; r < size && !want.found; ++r) {
        for (uint32_t s = 0; s < size && !want.found; ++s) {
          if (t[s][r].bytes != t[r][s].recv_bytes) want = {true, s, r, t[s][r].bytes, t[r][s].recv_bytes};
        }
      }
      ASSERT_TRUE(want.found);
      std::vector<std::vector<CountEntry>> nodes;
      for (uint32_t n = 0; n < shape.nodes(); ++n) nodes.push_back(NodeTables(shape, t, n));
      for (uint32_t n = 0; n < shape.nodes(); ++n) {
        // What node n reads: every node's segment layout, its own or out of a slot.
        const VectorDisagreement d = FirstVectorDisagreementOf(shape, [&](uint32_t rank) {
          return nodes[shape.node_of(rank)].data() + uint64_t{shape.local_index(rank)} * size;
        });
        SCOPED_TRACE(MapName(m.rank_node) + " seed " + std::to_string(seed) + " node " + std::to_string(n));
        ASSERT_TRUE(d.found);
        EXPECT_EQ(d.source, want.source);
        EXPECT_EQ(d.reader, want.reader);
        EXPECT_EQ(d.sent, want.sent);
        EXPECT_EQ(d.expected, want.expected);
        EXPECT_EQ(VectorTablesBytes(shape, n), nodes[n].size() * sizeof(CountEntry));
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100u);
}

TEST(VectorDisagreement, TheTextNamesThePairAndTheBytes) {
  EXPECT_EQ(VectorDisagreementText({true, 3, 2, 40, 41}), "rank 3 sends 40 bytes to rank 2, which expects 41 from it");
}

TEST(VectorDisagreement, SlotsHoldTheTablesOfTheNodeWithTheMostRanksOrNone) {
  Result<GroupShape> made = GroupShape::Make(2, {0, 0, 0, 1});  // 3 and 1 ranks
  ASSERT_TRUE(made.ok());
  const GroupShape& shape = made.value();
  // Node 0's tables: 3 x 4 entries of 24 bytes, 288 bytes; a slot holds its header besides.
  const uint64_t most = 3 * CountTableBytes(4);
  EagerLayout layout = PlanEagerLayout(shape, 1 << 20, 4 * most);
  EXPECT_TRUE(VectorTablesFitSlots(shape, layout));
  layout.slot = kEagerHeaderBytes + most;
  EXPECT_TRUE(VectorTablesFitSlots(shape, layout));
  layout.slot -= 1;
  EXPECT_FALSE(VectorTablesFitSlots(shape, layout)) << "node 1's 96 bytes would fit: every node must";
  layout.slot = kEagerHeaderBytes - 1;
  EXPECT_FALSE(VectorTablesFitSlots(shape, layout));
}

}  // namespace
}  // namespace ohio
