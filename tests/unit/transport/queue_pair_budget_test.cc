// The queue pairs and transport memory of a node (daemon/transport/verbs/queue_pair_budget.h):
// one RC queue pair per peer, as the transport runs today, or a bounded pool and one UD queue
// pair for the rest, from the sizes the transport allocates (daemon/transport/verbs/verbs_sizes.h).
#include <gtest/gtest.h>

#include "daemon/transport/verbs/queue_pair_budget.h"
#include "daemon/transport/verbs/verbs_sizes.h"

namespace ohio {
namespace {

using namespace verbs_sizes;

TEST(QueuePairBudget, OneRcQueuePairPerPeerTakesAReceiveRingEach) {
  const QueuePairBudget b = PlanQueuePairs(4096, kRcPoolUnlimited);
  EXPECT_EQ(b.peers, 4095u);
  EXPECT_EQ(b.rc_qps, 4095u);
  EXPECT_EQ(b.ud_qps, 0u);
  EXPECT_EQ(b.ring_bytes, 4095ull * 32 * 65536);  // 32 slots of 64 KiB: 8190 MiB
  EXPECT_EQ(b.bounce_bytes, 64ull * 65536);
  EXPECT_EQ(SendEntryBytes(30), 512u);  // 32 + 30 x 16 = 512
  EXPECT_EQ(b.queue_bytes, 4095ull * (128 * 512 + 32 * 16));
  EXPECT_EQ(b.total_bytes(), b.ring_bytes + b.bounce_bytes + b.queue_bytes);
}

TEST(QueuePairBudget, ABoundedPoolPutsTheOtherPeersOnOneUdQueuePair) {
  const QueuePairBudget b = PlanQueuePairs(4096, 256);
  EXPECT_EQ(b.rc_qps, 256u);
  EXPECT_EQ(b.ud_qps, 1u);
  EXPECT_EQ(b.ring_bytes, 256ull * 32 * 65536 + 4096ull * (4096 + 40));
  EXPECT_EQ(SendEntryBytes(1), 64u);
  EXPECT_EQ(b.queue_bytes, 256ull * (128 * 512 + 32 * 16) + (1024ull * 64 + 4096 * 16));
  // The same whatever the cluster's size past the pool.
  EXPECT_EQ(PlanQueuePairs(16384, 256).total_bytes(), b.total_bytes());
}

TEST(QueuePairBudget, APoolLargerThanThePeersIsEveryPeerOnRcAndNoneIsEveryPeerOnUd) {
  const QueuePairBudget small = PlanQueuePairs(128, 256);
  EXPECT_EQ(small.rc_qps, 127u);
  EXPECT_EQ(small.ud_qps, 0u);
  EXPECT_EQ(small.total_bytes(), PlanQueuePairs(128, kRcPoolUnlimited).total_bytes());
  const QueuePairBudget none = PlanQueuePairs(128, 0);
  EXPECT_EQ(none.rc_qps, 0u);
  EXPECT_EQ(none.ud_qps, 1u);
  EXPECT_EQ(none.ring_bytes, 4096ull * (4096 + 40));
  const QueuePairBudget alone = PlanQueuePairs(1, 0);
  EXPECT_EQ(alone.rc_qps + alone.ud_qps, 0u);
  EXPECT_EQ(alone.total_bytes(), 0u);
}

}  // namespace
}  // namespace ohio
