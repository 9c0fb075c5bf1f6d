// The two small models ohio-sim adds to SimGrid's network: how a node's ranks share its copy
// bandwidth (calibration.h) and the NIC queue-pair cache's penalty (qp_cache.h); and that a
// calibration file ohio-sim writes reads back the same.
#include <gtest/gtest.h>

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

TEST(SimModels, QueuePairCacheMissesInProportionBeyondItsSize) {
  const QpCacheModel off;
  EXPECT_FALSE(off.enabled());
  EXPECT_EQ(off.PenaltyPerMessage(4095), 0);
  const QpCacheModel cache{1024, 2e-6};
  EXPECT_EQ(cache.PenaltyPerMessage(127), 0);
  EXPECT_EQ(cache.PenaltyPerMessage(1024), 0);
  EXPECT_DOUBLE_EQ(cache.PenaltyPerMessage(4096), 2e-6 * 0.75);
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
