// From which message size ranks on one node read each other's send buffers in place
// (client/libohio/single_copy.h): where each rank has a core, and where they share them; and the
// PID namespace a rank publishes so that only ranks of one namespace read each other.
#include "client/libohio/single_copy.h"

#include <sys/stat.h>

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

TEST(PidNamespaceId, NamesThisProcesssNamespaceByDeviceAndInode) {
  struct stat st;
  ASSERT_EQ(stat("/proc/self/ns/pid", &st), 0);
  EXPECT_NE(PidNamespaceId(), 0u);
  EXPECT_EQ(PidNamespaceId(), PidNamespaceIdOf(st.st_dev, st.st_ino));
  // Namespaces differ by inode on the one nsfs device; a device apart is another namespace too.
  EXPECT_NE(PidNamespaceIdOf(4, 4026531836u), PidNamespaceIdOf(4, 4026532301u));
  EXPECT_NE(PidNamespaceIdOf(4, 4026531836u), PidNamespaceIdOf(5, 4026531836u));
}

}  // namespace
}  // namespace ohio
