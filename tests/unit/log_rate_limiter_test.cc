// A repeated log line is written `burst` times per interval; the rest are counted and told of by
// the next line written, or by a summary once the interval is over.
#include "common/log_rate_limiter.h"

#include <gtest/gtest.h>

namespace ohio {
namespace {

using std::chrono::seconds;

TEST(LogRateLimiter, WritesABurstThenCountsAndTellsOfTheRest) {
  LogRateLimiter limiter(seconds(10), 3);
  const auto t0 = LogRateLimiter::Clock::now();
  uint64_t suppressed = 99;
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(limiter.Allow(&suppressed, t0));
    EXPECT_EQ(suppressed, 0u);
  }
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(limiter.Allow(&suppressed, t0 + seconds(1)));
  EXPECT_TRUE(limiter.has_suppressed());
  EXPECT_EQ(limiter.TakeSuppressed(t0 + seconds(9)), 0u);  // the interval is not over
  // The next interval's first line carries the count.
  EXPECT_TRUE(limiter.Allow(&suppressed, t0 + seconds(10)));
  EXPECT_EQ(suppressed, 1000u);
  EXPECT_EQ(SuppressedNote(suppressed), " (1000 similar messages suppressed)");
  EXPECT_EQ(SuppressedNote(0), "");
}

TEST(LogRateLimiter, ASummaryTellsOfLinesLeftOutWhenNoMoreCome) {
  LogRateLimiter limiter(seconds(10), 1);
  const auto t0 = LogRateLimiter::Clock::now();
  uint64_t suppressed = 0;
  EXPECT_TRUE(limiter.Allow(&suppressed, t0));
  EXPECT_FALSE(limiter.Allow(&suppressed, t0));
  EXPECT_FALSE(limiter.Allow(&suppressed, t0));
  EXPECT_EQ(limiter.summary_due(), t0 + seconds(10));
  EXPECT_EQ(limiter.TakeSuppressed(t0 + seconds(10)), 2u);
  EXPECT_FALSE(limiter.has_suppressed());
  EXPECT_EQ(limiter.TakeSuppressed(t0 + seconds(30)), 0u);
}

}  // namespace
}  // namespace ohio
