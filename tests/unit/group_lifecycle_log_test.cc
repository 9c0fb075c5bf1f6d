#include "daemon/control/group_lifecycle_log.h"

#include <gtest/gtest.h>

namespace ohio {
namespace {

using Clock = GroupLifecycleLog::Clock;

TEST(GroupLifecycleLog, AUidFloodingIsCutAndToldOfWithoutSilencingAnother) {
  GroupLifecycleLog log;
  const Clock::time_point t0 = Clock::now();
  std::string note = "unset";
  for (uint32_t i = 0; i < GroupLifecycleLog::kBurst; ++i) {
    ASSERT_TRUE(log.Allow(1000, &note, t0)) << i;
    EXPECT_EQ(note, "");
  }
  EXPECT_FALSE(log.Allow(1000, &note, t0));
  EXPECT_FALSE(log.Allow(1000, &note, t0 + std::chrono::seconds(1)));
  EXPECT_FALSE(log.Allow(1000, &note, t0 + std::chrono::seconds(9)));
  // Another user's lines are written in the same interval.
  EXPECT_TRUE(log.Allow(1001, &note, t0 + std::chrono::seconds(9)));
  EXPECT_EQ(note, "");
  // The flooding uid's next line, in the next interval, says how many were left out.
  ASSERT_TRUE(log.Allow(1000, &note, t0 + GroupLifecycleLog::kInterval));
  EXPECT_EQ(note, " (3 similar messages suppressed)");
  ASSERT_TRUE(log.Allow(1000, &note, t0 + GroupLifecycleLog::kInterval));
  EXPECT_EQ(note, "");
}

TEST(GroupLifecycleLog, AQuietUidStartsAfreshAfterItsInterval) {
  GroupLifecycleLog log;
  const Clock::time_point t0 = Clock::now();
  std::string note;
  for (uint32_t i = 0; i < GroupLifecycleLog::kBurst; ++i) ASSERT_TRUE(log.Allow(7, &note, t0));
  // Another uid's line after uid 7's interval is over drops uid 7's state: nothing was left out.
  ASSERT_TRUE(log.Allow(8, &note, t0 + 2 * GroupLifecycleLog::kInterval));
  for (uint32_t i = 0; i < GroupLifecycleLog::kBurst; ++i) {
    ASSERT_TRUE(log.Allow(7, &note, t0 + 2 * GroupLifecycleLog::kInterval)) << i;
    EXPECT_EQ(note, "");
  }
  EXPECT_FALSE(log.Allow(7, &note, t0 + 2 * GroupLifecycleLog::kInterval));
}

}  // namespace
}  // namespace ohio
