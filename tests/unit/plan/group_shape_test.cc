#include "shm/plan/group_shape.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "common/status.h"
#include "tests/unit/plan/rank_maps.h"

namespace ohio {
namespace {

using ::testing::HasSubstr;
using testing_util::AllMaps;
using testing_util::AllValidMaps;
using testing_util::EveryNodeUsed;
using testing_util::MapName;

TEST(GroupShapeMake, RejectsEmptyGroup) {
  for (uint32_t nodes : {0u, 1u, 3u}) {
    Result<GroupShape> r = GroupShape::Make(nodes, {});
    ASSERT_FALSE(r.ok()) << nodes;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_FALSE(r.status().message().empty());
  }
}

TEST(GroupShapeMake, RejectsZeroNodes) {
  Result<GroupShape> r = GroupShape::Make(0, {0, 0});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("node"));
}

TEST(GroupShapeMake, RejectsNodeIndexOutOfRange) {
  // Rank 2 is placed on node 5 of a 2-node group.
  Result<GroupShape> r = GroupShape::Make(2, {0, 1, 5, 0});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("rank 2"));
  EXPECT_THAT(r.status().message(), HasSubstr("node 5"));
  EXPECT_THAT(r.status().message(), HasSubstr("2 nodes"));

  // Exactly one past the end.
  Result<GroupShape> edge = GroupShape::Make(3, {0, 1, 2, 3});
  ASSERT_FALSE(edge.ok());
  EXPECT_EQ(edge.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(edge.status().message(), HasSubstr("rank 3"));
  EXPECT_THAT(edge.status().message(), HasSubstr("node 3"));
}

TEST(GroupShapeMake, RejectsNodeWithoutRanks) {
  Result<GroupShape> r = GroupShape::Make(3, {0, 2, 2, 0});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("node 1"));

  Result<GroupShape> last = GroupShape::Make(4, {0, 1, 2, 2});
  ASSERT_FALSE(last.ok());
  EXPECT_EQ(last.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(last.status().message(), HasSubstr("node 3"));
}

// More nodes than ranks cannot all be used; refused before anything is sized by the node
// count, so an absurd count from a client costs nothing.
TEST(GroupShapeMake, RejectsMoreNodesThanRanks) {
  for (uint32_t nodes : {4u, 1000u, 4000000000u}) {
    Result<GroupShape> r = GroupShape::Make(nodes, {0, 1, 2});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("a group of 3 ranks cannot span " + std::to_string(nodes) + " nodes"));
  }
}

// Every map of up to 6 ranks over up to 3 nodes that leaves a node empty is refused, naming
// the first empty node; an out-of-range node index names the first offending rank.
TEST(GroupShapeMake, ExhaustiveInvalidMaps) {
  int refused = 0;
  for (uint32_t p = 1; p <= 6; ++p) {
    for (uint32_t n = 1; n <= 4; ++n) {
      for (const auto& map : AllMaps(p, n)) {
        // Declared as one node fewer than used: some rank is out of range.
        if (n >= 2) {
          auto it = std::find(map.begin(), map.end(), n - 1);
          if (it != map.end()) {
            Result<GroupShape> r = GroupShape::Make(n - 1, map);
            ASSERT_FALSE(r.ok()) << MapName(map);
            EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
            const std::string expected = n - 1 > p ? "cannot span"
                                                   : "rank " + std::to_string(it - map.begin()) + " ";
            EXPECT_THAT(r.status().message(), HasSubstr(expected)) << MapName(map);
            ++refused;
          }
        }
        if (EveryNodeUsed(map, n)) continue;
        uint32_t first_empty = 0;
        while (std::find(map.begin(), map.end(), first_empty) != map.end()) ++first_empty;
        Result<GroupShape> r = GroupShape::Make(n, map);
        ASSERT_FALSE(r.ok()) << MapName(map) << " over " << n;
        EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
        const std::string expected = n > p ? "cannot span" : "node " + std::to_string(first_empty) + " ";
        EXPECT_THAT(r.status().message(), HasSubstr(expected)) << MapName(map);
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, 1000);
}

TEST(GroupShape, ExhaustiveAgainstBruteForce) {
  const auto maps = AllValidMaps(6, 3);
  // Surjections: P=1:1, 2:1+2, 3:1+6+6, 4:1+14+36, 5:1+30+150, 6:1+62+540.
  EXPECT_EQ(maps.size(), 1u + 3 + 13 + 51 + 181 + 603);
  for (const auto& rm : maps) {
    const auto& map = rm.rank_node;
    const uint32_t n = rm.nodes;
    const uint32_t p = static_cast<uint32_t>(map.size());
    SCOPED_TRACE(MapName(map) + " over " + std::to_string(n) + " nodes");
    Result<GroupShape> r = GroupShape::Make(n, map);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const GroupShape& s = r.value();

    ASSERT_EQ(s.size(), p);
    ASSERT_EQ(s.nodes(), n);
    EXPECT_EQ(s.rank_node(), map);

    uint32_t max_ppn = 0;
    uint32_t before = 0;
    for (uint32_t j = 0; j < n; ++j) {
      std::vector<uint32_t> ranks;
      for (uint32_t g = 0; g < p; ++g) {
        if (map[g] == j) ranks.push_back(g);
      }
      ASSERT_EQ(s.ppn(j), ranks.size()) << "node " << j;
      EXPECT_EQ(s.ranks_before(j), before) << "node " << j;
      for (uint32_t l = 0; l < ranks.size(); ++l) {
        EXPECT_EQ(s.rank_at(j, l), ranks[l]) << "node " << j << " l " << l;
      }
      before += static_cast<uint32_t>(ranks.size());
      max_ppn = std::max<uint32_t>(max_ppn, static_cast<uint32_t>(ranks.size()));
    }
    EXPECT_EQ(before, p);
    EXPECT_EQ(s.max_ppn(), max_ppn);

    for (uint32_t g = 0; g < p; ++g) {
      EXPECT_EQ(s.node_of(g), map[g]);
      uint32_t li = 0;
      for (uint32_t h = 0; h < g; ++h) li += map[h] == map[g];
      EXPECT_EQ(s.local_index(g), li) << "rank " << g;
      EXPECT_EQ(s.rank_at(s.node_of(g), s.local_index(g)), g);
    }
  }
}

}  // namespace
}  // namespace ohio
