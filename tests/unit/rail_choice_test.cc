// The rail of a group's puts to one peer (shm/placement/rail_choice.h): the group's nearest rails that
// the peer is connected on, spread by key among equally near ones; without a preference, the
// key modulo the rails connected, as the verbs transport did before groups had rail orders.
#include "shm/placement/rail_choice.h"

#include <gtest/gtest.h>

namespace ohio {
namespace {

TEST(RailChoice, NoPreferenceSpreadsByKeyOverTheConnectedRails) {
  for (uint64_t key = 0; key < 12; ++key) {
    EXPECT_EQ(ChooseRail({}, 1, key), 0u);
    EXPECT_EQ(ChooseRail({}, 2, key), key % 2) << key;
    EXPECT_EQ(ChooseRail({}, 3, key), key % 3) << key;
  }
}

TEST(RailChoice, ALoneNearestRailTakesEveryKey) {
  // Two rails, rail 1 local to the group's node: every group there, whatever its key, on rail 1
  // (where key modulo 2 would have put the even keys on rail 0).
  for (uint64_t key = 0; key < 8; ++key) {
    EXPECT_EQ(ChooseRail({{1}, {0}}, 2, key), 1u) << key;
    EXPECT_EQ(ChooseRail({{0}, {1}}, 2, key), 0u) << key;
  }
}

TEST(RailChoice, EquallyNearRailsShareTheGroupsByKey) {
  // Four rails, 1 and 3 local to the node, 0 unknown, 2 remote.
  const RailTiers tiers = {{1, 3}, {0}, {2}};
  EXPECT_EQ(ChooseRail(tiers, 4, 0), 1u);
  EXPECT_EQ(ChooseRail(tiers, 4, 1), 3u);
  EXPECT_EQ(ChooseRail(tiers, 4, 2), 1u);
  EXPECT_EQ(ChooseRail(tiers, 4, 7), 3u);
  // One tier holding every rail (all local, or all of unknown locality, as Soft-RoCE): the same
  // as no preference.
  for (uint64_t key = 0; key < 6; ++key) EXPECT_EQ(ChooseRail({{0, 1, 2}}, 3, key), ChooseRail({}, 3, key)) << key;
}

TEST(RailChoice, APeerWithFewerRailsGetsTheNearestOfThoseItHas) {
  // Rails pair by position: a peer with 2 rails is connected on rails 0 and 1 only.
  const RailTiers tiers = {{3}, {2}, {1}, {0}};
  for (uint64_t key = 0; key < 4; ++key) {
    EXPECT_EQ(ChooseRail(tiers, 4, key), 3u);
    EXPECT_EQ(ChooseRail(tiers, 3, key), 2u);
    EXPECT_EQ(ChooseRail(tiers, 2, key), 1u);
    EXPECT_EQ(ChooseRail(tiers, 1, key), 0u);
  }
  // Of a tier, only the rails the peer has count.
  EXPECT_EQ(ChooseRail({{1, 3}, {0}}, 2, 0), 1u);
  EXPECT_EQ(ChooseRail({{1, 3}, {0}}, 2, 1), 1u);
  // None of the preferred rails connected: by key, as without a preference.
  EXPECT_EQ(ChooseRail({{2, 3}}, 2, 5), 1u);
}

}  // namespace
}  // namespace ohio
