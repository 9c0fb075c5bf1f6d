// The daemon's latency histograms: size classes by bytes per rank, bucket placement at and
// around the bounds, and snapshots whose count always equals the sum of their buckets.
#include <gtest/gtest.h>

#include <cmath>

#include "daemon/ops/latency_histogram.h"

namespace ohio {
namespace {

using std::chrono::microseconds;
using std::chrono::nanoseconds;

TEST(LatencyHistograms, SizeClassesByBytesPerRank) {
  EXPECT_EQ(LatencyHistograms::SizeClass(0), 0u);
  EXPECT_EQ(LatencyHistograms::SizeClass(1024), 0u);
  EXPECT_EQ(LatencyHistograms::SizeClass(1025), 1u);
  EXPECT_EQ(LatencyHistograms::SizeClass(16 << 10), 1u);
  EXPECT_EQ(LatencyHistograms::SizeClass((16 << 10) + 1), 2u);
  EXPECT_EQ(LatencyHistograms::SizeClass(256 << 10), 2u);
  EXPECT_EQ(LatencyHistograms::SizeClass(4 << 20), 3u);
  EXPECT_EQ(LatencyHistograms::SizeClass((4 << 20) + 1), 4u);
  EXPECT_EQ(LatencyHistograms::SizeClass(~uint64_t{0}), 4u);
  EXPECT_EQ(LatencyHistograms::SizeClassName(0), "0-1KiB");
  EXPECT_EQ(LatencyHistograms::SizeClassName(1), "1KiB-16KiB");
  EXPECT_EQ(LatencyHistograms::SizeClassName(3), "256KiB-4MiB");
  EXPECT_EQ(LatencyHistograms::SizeClassName(4), "4MiB+");
  // Each class starts where the previous one ends.
  for (size_t c = 1; c < LatencyHistograms::kSizeClasses; ++c) {
    EXPECT_EQ(LatencyHistograms::SizeClassMinBytes(c), LatencyHistograms::SizeClassMaxBytes(c - 1));
    EXPECT_EQ(LatencyHistograms::SizeClass(LatencyHistograms::SizeClassMinBytes(c) + 1), c);
  }
  EXPECT_EQ(LatencyHistograms::SizeClassMaxBytes(LatencyHistograms::kSizeClasses - 1), 0u);
}

TEST(LatencyHistograms, BucketBoundsRiseToInfinity) {
  EXPECT_DOUBLE_EQ(LatencyHistograms::BucketBoundSeconds(0), 10e-6);
  for (size_t b = 1; b < LatencyHistograms::kBuckets; ++b) {
    EXPECT_GT(LatencyHistograms::BucketBoundSeconds(b), LatencyHistograms::BucketBoundSeconds(b - 1));
  }
  EXPECT_DOUBLE_EQ(LatencyHistograms::BucketBoundSeconds(LatencyHistograms::kBuckets - 2), 10.0);
  EXPECT_TRUE(std::isinf(LatencyHistograms::BucketBoundSeconds(LatencyHistograms::kBuckets - 1)));
}

TEST(LatencyHistograms, RecordsIntoTheBucketWhoseBoundIsNotExceeded) {
  LatencyHistograms h;
  h.Record(64, microseconds(10));     // exactly the first bound
  h.Record(64, nanoseconds(10'001));  // just above it
  h.Record(64, microseconds(0));
  h.Record(100 << 10, std::chrono::milliseconds(3));
  h.Record(8 << 20, std::chrono::seconds(11));  // beyond the last finite bound
  h.Record(8 << 20, nanoseconds(-5));           // a clock step backwards counts as 0

  const auto small = h.Read(0);
  EXPECT_EQ(small.count, 3u);
  EXPECT_EQ(small.counts[0], 2u);
  EXPECT_EQ(small.counts[1], 1u);
  EXPECT_EQ(small.sum_ns, 20'001u);

  const auto mid = h.Read(2);
  EXPECT_EQ(mid.count, 1u);
  EXPECT_EQ(mid.counts[8], 1u);  // (2.5 ms, 5 ms]
  EXPECT_DOUBLE_EQ(LatencyHistograms::BucketBoundSeconds(8), 5e-3);

  const auto large = h.Read(4);
  EXPECT_EQ(large.count, 2u);
  EXPECT_EQ(large.counts[LatencyHistograms::kBuckets - 1], 1u);
  EXPECT_EQ(large.counts[0], 1u);

  EXPECT_EQ(h.Read(1).count, 0u);
  EXPECT_EQ(h.Read(3).count, 0u);
}

}  // namespace
}  // namespace ohio
