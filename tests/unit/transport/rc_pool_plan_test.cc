// Which peers hold the node's RC queue pairs (daemon/transport/verbs/pool/rc_pool_plan.h): an
// unlimited pool is today's transport (every peer on RC, nothing moves), an empty one puts
// every peer on UD; the pool fills with the costliest peers; traffic moving from one peer to
// another promotes the busy one and demotes the idle one, counted, but only past the hysteresis
// (a ratio, and intervals to settle); an idle member leaves; moves per interval are bounded.
#include <gtest/gtest.h>

#include "daemon/transport/verbs/pool/rc_pool_plan.h"

namespace ohio {
namespace {

RcPoolOptions Pool(uint32_t capacity) {
  RcPoolOptions o;
  o.capacity = capacity;
  o.mtu = 4096;
  o.keep = 0;  // this interval alone, unless a test says otherwise
  o.displace_ratio = 1.5;
  o.settle_intervals = 2;
  o.idle_intervals = 3;
  o.max_moves = 16;
  return o;
}

// `puts` puts of 4 KiB (two datagrams' worth each: the put and its MTU of bytes).
PeerTraffic To(PeerId peer, uint64_t puts) { return {peer, puts * 4096, puts}; }

TEST(RcPoolPlan, AnUnlimitedPoolIsEveryPeerOnRcAndNothingMoves) {
  RcPoolPlan plan(Pool(RcPoolOptions::kUnlimited));
  for (PeerId p = 1; p <= 5; ++p) plan.AddPeer(p);
  EXPECT_EQ(plan.rc_peers(), 5u);
  EXPECT_TRUE(plan.EndInterval({To(1, 100)}).empty());
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(plan.EndInterval({}).empty());
  EXPECT_EQ(plan.rc_peers(), 5u);
  EXPECT_EQ(plan.promotions() + plan.demotions(), 0u);
}

TEST(RcPoolPlan, AnEmptyPoolKeepsEveryPeerOnUd) {
  RcPoolPlan plan(Pool(0));
  for (PeerId p = 1; p <= 3; ++p) plan.AddPeer(p);
  EXPECT_TRUE(plan.EndInterval({To(1, 1000), To(2, 10)}).empty());
  EXPECT_EQ(plan.rc_peers(), 0u);
  EXPECT_FALSE(plan.InRc(1));
}

TEST(RcPoolPlan, ThePoolFillsWithTheCostliestPeers) {
  RcPoolPlan plan(Pool(2));
  for (PeerId p = 1; p <= 4; ++p) plan.AddPeer(p);
  EXPECT_EQ(plan.rc_peers(), 0u);
  const auto moves = plan.EndInterval({To(1, 1), To(3, 50), To(4, 80)});
  EXPECT_EQ(moves, (std::vector<RcPoolMove>{{4, true}, {3, true}}));
  EXPECT_TRUE(plan.InRc(3));
  EXPECT_TRUE(plan.InRc(4));
  EXPECT_FALSE(plan.InRc(1));
  EXPECT_DOUBLE_EQ(plan.Cost(4), 160);  // 80 puts + 80 MTUs of bytes
  EXPECT_EQ(plan.promotions(), 2u);
}

// The busy peer changes: the new one is promoted and the old one demoted, once the first has
// settled, and both moves are counted; traffic that only nearly overtakes moves nothing.
TEST(RcPoolPlan, TrafficMovingToAnotherPeerPromotesItAndDemotesTheIdleOne) {
  RcPoolPlan plan(Pool(1));
  plan.AddPeer(1);
  plan.AddPeer(2);
  EXPECT_EQ(plan.EndInterval({To(1, 100), To(2, 10)}), (std::vector<RcPoolMove>{{1, true}}));
  // 2 costs more now, but 1 moved an interval ago: it settles first.
  EXPECT_TRUE(plan.EndInterval({To(1, 10), To(2, 100)}).empty());
  // Settled; 2 costs 10 times 1: 1 down, then 2 up.
  EXPECT_EQ(plan.EndInterval({To(1, 10), To(2, 100)}), (std::vector<RcPoolMove>{{1, false}, {2, true}}));
  EXPECT_TRUE(plan.InRc(2));
  EXPECT_FALSE(plan.InRc(1));
  EXPECT_EQ(plan.promotions(), 2u);
  EXPECT_EQ(plan.demotions(), 1u);
  EXPECT_EQ(plan.rc_peers(), 1u);
  // 1 back at 1.4 times 2's traffic, long past settling: below displace_ratio, nothing moves.
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(plan.EndInterval({To(1, 140), To(2, 100)}).empty()) << i;
  EXPECT_TRUE(plan.InRc(2));
  EXPECT_EQ(plan.EndInterval({To(1, 160), To(2, 100)}), (std::vector<RcPoolMove>{{2, false}, {1, true}}));
}

TEST(RcPoolPlan, SmoothingKeepsOneBurstFromDisplacingASteadyPeer) {
  RcPoolOptions o = Pool(1);
  o.keep = 0.75;
  RcPoolPlan plan(o);
  plan.AddPeer(1);
  plan.AddPeer(2);
  for (int i = 0; i < 10; ++i) plan.EndInterval({To(1, 100)});
  ASSERT_TRUE(plan.InRc(1));
  // One interval of 2 at 3 times 1's traffic weighs a quarter: not enough.
  EXPECT_TRUE(plan.EndInterval({To(1, 100), To(2, 300)}).empty());
  // Sustained, it is.
  std::vector<RcPoolMove> moves;
  for (int i = 0; i < 5 && moves.empty(); ++i) moves = plan.EndInterval({To(1, 100), To(2, 300)});
  EXPECT_EQ(moves, (std::vector<RcPoolMove>{{1, false}, {2, true}}));
}

TEST(RcPoolPlan, AnIdleMemberLeavesAndAnIdleOutsiderDoesNotEnter) {
  RcPoolPlan plan(Pool(2));
  for (PeerId p = 1; p <= 3; ++p) plan.AddPeer(p);
  plan.EndInterval({To(1, 10), To(2, 10)});
  ASSERT_EQ(plan.rc_peers(), 2u);
  // 1 goes quiet; 2 stays busy; 3 never sends.
  std::vector<RcPoolMove> moves;
  int intervals = 0;
  while (moves.empty() && intervals < 10) {
    moves = plan.EndInterval({To(2, 10)});
    ++intervals;
  }
  EXPECT_EQ(moves, (std::vector<RcPoolMove>{{1, false}}));
  EXPECT_EQ(intervals, 3);  // idle_intervals
  EXPECT_FALSE(plan.InRc(3));
  EXPECT_EQ(plan.rc_peers(), 1u);
}

TEST(RcPoolPlan, WithAPlaceForEveryPeerAnIdleMemberStays) {
  RcPoolPlan plan(Pool(3));
  for (PeerId p = 1; p <= 3; ++p) plan.AddPeer(p);
  plan.EndInterval({To(1, 10), To(2, 10), To(3, 10)});
  ASSERT_EQ(plan.rc_peers(), 3u);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(plan.EndInterval({}).empty()) << i;
  EXPECT_EQ(plan.rc_peers(), 3u);
}

TEST(RcPoolPlan, MovesPerIntervalAreBoundedAndARemovedPeerFreesItsPlace) {
  RcPoolOptions o = Pool(10);
  o.max_moves = 3;
  RcPoolPlan plan(o);
  for (PeerId p = 1; p <= 8; ++p) plan.AddPeer(p);
  std::vector<PeerTraffic> all;
  for (PeerId p = 1; p <= 8; ++p) all.push_back(To(p, p));
  EXPECT_EQ(plan.EndInterval(all), (std::vector<RcPoolMove>{{8, true}, {7, true}, {6, true}}));
  EXPECT_EQ(plan.EndInterval(all).size(), 3u);
  EXPECT_EQ(plan.EndInterval(all), (std::vector<RcPoolMove>{{2, true}, {1, true}}));
  EXPECT_EQ(plan.rc_peers(), 8u);
  plan.RemovePeer(8);
  EXPECT_EQ(plan.rc_peers(), 7u);
  EXPECT_FALSE(plan.InRc(8));
}

TEST(RcPoolPlan, DisplacementStopsAtTheFirstOutsiderNotWorthIt) {
  RcPoolPlan plan(Pool(2));
  for (PeerId p = 1; p <= 4; ++p) plan.AddPeer(p);
  plan.EndInterval({To(1, 10), To(2, 20)});
  plan.EndInterval({To(1, 10), To(2, 20)});
  // 4 is worth displacing 1 (40 against 10); 3 (25) is not worth displacing 2 (20).
  EXPECT_EQ(plan.EndInterval({To(1, 10), To(2, 20), To(3, 25), To(4, 40)}),
            (std::vector<RcPoolMove>{{1, false}, {4, true}}));
  EXPECT_TRUE(plan.InRc(2));
  EXPECT_FALSE(plan.InRc(3));
}

// The transport tells the plan where each peer really is: a promotion the other end refused puts
// the peer back outside (settling before it is tried again), and a pair the other end moved
// counts as a member, so the pool is never planned past its bound.
TEST(RcPoolPlan, WhereTheTransportPlacesAPeerOverridesThePlan) {
  RcPoolPlan plan(Pool(1));
  plan.AddPeer(1);
  plan.AddPeer(2);
  EXPECT_EQ(plan.EndInterval({To(1, 10)}), (std::vector<RcPoolMove>{{1, true}}));
  plan.Place(1, false);  // refused by the peer
  EXPECT_FALSE(plan.InRc(1));
  EXPECT_EQ(plan.rc_peers(), 0u);
  EXPECT_TRUE(plan.EndInterval({To(1, 10)}).empty()) << "not settled yet";
  EXPECT_EQ(plan.EndInterval({To(1, 10)}), (std::vector<RcPoolMove>{{1, true}}));
  plan.Place(3, true);  // a new peer the other end moved to RC... with 1 already planned in
  plan.Place(1, false);  // ...and 1 refused again
  EXPECT_EQ(plan.rc_peers(), 1u);
  EXPECT_TRUE(plan.InRc(3));
  EXPECT_TRUE(plan.EndInterval({To(1, 10)}).empty()) << "3 holds the one place, and neither has settled";
  plan.Place(3, true);  // where it already is: nothing changes
  EXPECT_EQ(plan.rc_peers(), 1u);
}

}  // namespace
}  // namespace ohio
