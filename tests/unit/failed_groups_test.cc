// The failed groups a daemon still tells a late node of (daemon/control/failed_groups.h): told
// to the owner's ranks until the record expires, never to another uid, and no more than the
// capacity kept (the soonest to expire dropped first).
#include "daemon/control/failed_groups.h"

#include <gtest/gtest.h>

namespace ohio {
namespace {

using Clock = FailedGroups::Clock;

GroupKey Key(uint8_t n) {
  GroupKey k{};
  k[0] = n;
  return k;
}

TEST(FailedGroups, ToldToTheOwnerUntilItExpires) {
  FailedGroups failed(8);
  const auto now = Clock::now();
  failed.Remember(Key(1), 1000, "group 01 has failed on node n1: rank 2 died", now + std::chrono::seconds(10));
  EXPECT_EQ(failed.Told(Key(1), 1000, now).value_or(""), "group 01 has failed on node n1: rank 2 died");
  EXPECT_FALSE(failed.Told(Key(1), 1001, now)) << "another uid learns nothing of the key";
  EXPECT_FALSE(failed.Told(Key(2), 1000, now));
  EXPECT_FALSE(failed.Told(Key(1), 1000, now + std::chrono::seconds(10))) << "expired";
  EXPECT_EQ(failed.size(), 0u);
}

TEST(FailedGroups, AtMostTheCapacityTheSoonestToExpireDroppedFirst) {
  FailedGroups failed(2);
  const auto now = Clock::now();
  failed.Remember(Key(1), 0, "one", now + std::chrono::seconds(30));
  failed.Remember(Key(2), 0, "two", now + std::chrono::seconds(10));
  failed.Remember(Key(3), 0, "three", now + std::chrono::seconds(20));
  EXPECT_EQ(failed.size(), 2u);
  EXPECT_TRUE(failed.Told(Key(1), 0, now));
  EXPECT_FALSE(failed.Told(Key(2), 0, now));
  EXPECT_TRUE(failed.Told(Key(3), 0, now));
}

}  // namespace
}  // namespace ohio
