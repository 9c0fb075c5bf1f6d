// The cap on connections not yet authenticated that the data port and the peer port share: one
// address gets half of it, all addresses together all of it, and a refusal says which and why.
#include "common/unauthenticated_cap.h"

#include <gtest/gtest.h>

namespace ohio {
namespace {

TEST(UnauthenticatedCap, OneAddressGetsHalfAndAllTogetherTheWhole) {
  EXPECT_FALSE(JudgeUnauthenticated(0, 0, 8, "10.0.0.2", "max-x", "have not said hello yet"));
  EXPECT_FALSE(JudgeUnauthenticated(3, 3, 8, "10.0.0.2", "max-x", "have not said hello yet"));
  auto source = JudgeUnauthenticated(4, 4, 8, "10.0.0.2", "max-x", "have not said hello yet");
  ASSERT_TRUE(source);
  EXPECT_EQ(source->reason, ConnectionRefusal::kSourceCap);
  EXPECT_EQ(source->why, "10.0.0.2 has 4 connections that have not said hello yet, half of max-x = 8");
  EXPECT_FALSE(JudgeUnauthenticated(7, 0, 8, "10.0.0.3", "max-x", "have not said hello yet"));
  auto total = JudgeUnauthenticated(8, 0, 8, "10.0.0.3", "max-x", "have not said hello yet");
  ASSERT_TRUE(total);
  EXPECT_EQ(total->reason, ConnectionRefusal::kTotalCap);
  EXPECT_EQ(total->why, "8 connections have not said hello yet; max-x = 8");
}

TEST(UnauthenticatedCap, TheSmallestCapStillAdmitsOneFromAnAddress) {
  EXPECT_EQ(PerSourceShare(2), 1u);
  EXPECT_EQ(PerSourceShare(3), 1u);
  EXPECT_FALSE(JudgeUnauthenticated(0, 0, 2, "h", "max-x", "wait"));
  EXPECT_TRUE(JudgeUnauthenticated(1, 1, 2, "h", "max-x", "wait"));
}

TEST(UnauthenticatedCap, EveryRefusalHasALabel) {
  for (size_t r = 0; r < kConnectionRefusals; ++r) {
    const std::string name = ConnectionRefusalName(static_cast<ConnectionRefusal>(r));
    EXPECT_FALSE(name.empty());
    for (size_t other = 0; other < r; ++other) {
      EXPECT_NE(name, ConnectionRefusalName(static_cast<ConnectionRefusal>(other)));
    }
  }
}

}  // namespace
}  // namespace ohio
