// From which message size ranks on one node read each other's send buffers in place
// (client/libohio/single_copy.h): where each rank has a core, and where they share them.
#include "client/libohio/single_copy.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace ohio {
namespace {

TEST(SingleCopyThreshold, LaterWhereRanksShareCoresUnlessTheEnvironmentSays) {
  // Unset: 32 KiB with a core per rank, 256 KiB oversubscribed (a second meeting costs a sleep).
  EXPECT_EQ(SingleCopyThresholdFor(nullptr, false), 32768u);
  EXPECT_EQ(SingleCopyThresholdFor(nullptr, true), 262144u);
  EXPECT_EQ(SingleCopyThresholdFor("", true), 262144u);
  // Set: the same everywhere, 0 meaning never.
  EXPECT_EQ(SingleCopyThresholdFor("65536", false), 65536u);
  EXPECT_EQ(SingleCopyThresholdFor("65536", true), 65536u);
  EXPECT_EQ(SingleCopyThresholdFor("0", false), ~uint64_t{0});
  EXPECT_EQ(SingleCopyThresholdFor("0", true), ~uint64_t{0});
}

}  // namespace
}  // namespace ohio
