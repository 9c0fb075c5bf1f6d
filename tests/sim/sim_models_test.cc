// The two small models ohio-sim adds to SimGrid's network: how a node's ranks share its copy
// bandwidth (calibration.h) and the NIC queue-pair cache (qp_cache.h: exact misses of an LRU for
// given orders of use); and that a calibration file ohio-sim writes reads back the same.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/calibration.h"
#include "sim/qp_cache.h"

namespace ohio::sim {
namespace {

TEST(SimModels, RanksShareTheCopyBandwidthOfTheCoresTheyRunOn) {
  Calibration c;
  c.copy_bandwidth = {10e9, 16e9, 20e9};  // 1, 2, 3 threads
  EXPECT_DOUBLE_EQ(PerRankCopyBandwidth(c, 1, 56), 10e9);
  EXPECT_DOUBLE_EQ(PerRankCopyBandwidth(c, 2, 56), 8e9);
  // Beyond the threads measured: saturated at the last figure, shared by every rank.
  EXPECT_DOUBLE_EQ(PerRankCopyBandwidth(c, 56, 56), 20e9 / 56);
  // More ranks than cores: the cores' figure, shared by every rank.
  EXPECT_DOUBLE_EQ(PerRankCopyBandwidth(c, 8, 2), 16e9 / 8);
}

// Uses in `order` through a cache of `entries`; the miss flags, as 'M' and '.'.
std::string Misses(uint64_t entries, uint32_t peers, const std::vector<uint32_t>& order) {
  QueuePairCache cache(entries, peers);
  std::string flags;
  for (uint32_t p : order) flags += cache.Use(p) ? 'M' : '.';
  EXPECT_EQ(cache.uses(), order.size());
  EXPECT_EQ(static_cast<size_t>(cache.misses()), std::count(flags.begin(), flags.end(), 'M'));
  return flags;
}

TEST(SimModels, QueuePairCacheMissesOnlyFirstUsesWhenEveryPeerFits) {
  EXPECT_FALSE(QpCacheModel{}.enabled());
  EXPECT_TRUE((QpCacheModel{1, 0}.enabled()));
  EXPECT_EQ(Misses(3, 4, {1, 2, 3, 1, 2, 3, 3, 2, 1}), "MMM......");
  EXPECT_EQ(Misses(4, 4, {0, 1, 2, 3, 3, 2, 1, 0}), "MMMM....");
}

TEST(SimModels, QueuePairCacheOfOneMissesEveryChangeOfPeer) {
  EXPECT_EQ(Misses(1, 3, {1, 1, 2, 2, 1, 2, 2}), "M.M.MM.");
}

TEST(SimModels, QueuePairCacheEvictsTheLeastRecentlyUsed) {
  // Cycling through more peers than entries misses every time (round-robin defeats LRU)...
  EXPECT_EQ(Misses(2, 3, {0, 1, 2, 0, 1, 2}), "MMMMMM");
  // ...while a peer used again stays: 0 is used before 2 comes in, so 1 is evicted.
  EXPECT_EQ(Misses(2, 3, {0, 1, 0, 2, 0, 1, 2}), "MM.M.MM");
  // Cached peers are kept across any number of other hits.
  EXPECT_EQ(Misses(2, 5, {4, 3, 4, 3, 4, 3, 0, 3, 4}), "MM....M.M");
}

TEST(SimModels, CalibrationRoundTrips) {
  Calibration c;
  c.copy_bandwidth = {1.5e9, 2.75e9};
  c.handoff_latency = 3.25e-6;
  c.daemon_message_cost = 1.5e-6;
  c.daemon_round_cost = 4e-5;
  c.qp_cache_entries = 512;
  c.qp_miss_penalty = 1e-6;
  c.note = "two lines\nof note";
  auto back = ParseCalibration(RenderCalibration(c), "rendered");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back.value().copy_bandwidth, c.copy_bandwidth);
  EXPECT_DOUBLE_EQ(back.value().handoff_latency, c.handoff_latency);
  EXPECT_DOUBLE_EQ(back.value().daemon_message_cost, c.daemon_message_cost);
  EXPECT_DOUBLE_EQ(back.value().daemon_round_cost, c.daemon_round_cost);
  EXPECT_EQ(back.value().qp_cache_entries, 512u);
  EXPECT_DOUBLE_EQ(back.value().qp_miss_penalty, c.qp_miss_penalty);
}

}  // namespace
}  // namespace ohio::sim
