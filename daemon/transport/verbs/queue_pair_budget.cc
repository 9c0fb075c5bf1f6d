#include "daemon/transport/verbs/queue_pair_budget.h"

#include <algorithm>

#include "daemon/transport/verbs/verbs_sizes.h"

namespace ohio {

QueuePairBudget PlanQueuePairs(uint32_t nodes, uint32_t rc_pool) {
  using namespace verbs_sizes;
  QueuePairBudget b;
  b.peers = nodes > 0 ? nodes - 1 : 0;
  b.rc_qps = std::min(b.peers, rc_pool);
  b.ud_qps = b.rc_qps < b.peers ? 1 : 0;
  const uint64_t rc_ring = uint64_t{kRcRecvSlots} * kSlotBytes;
  const uint64_t ud_ring = uint64_t{kUdRecvSlots} * (kUdMtu + kUdGrhBytes);
  b.ring_bytes = b.rc_qps * rc_ring + b.ud_qps * ud_ring;
  b.bounce_bytes = b.peers > 0 ? uint64_t{kBounceSlots} * kSlotBytes : 0;
  const uint64_t rc_queues = uint64_t{kRcSendDepth} * SendEntryBytes(kRcMaxGather) + uint64_t{kRcRecvSlots} * kRecvEntryBytes;
  // A UD send is one datagram of one SGE (header and payload).
  const uint64_t ud_queues = uint64_t{kUdSendDepth} * SendEntryBytes(1) + uint64_t{kUdRecvSlots} * kRecvEntryBytes;
  b.queue_bytes = b.rc_qps * rc_queues + b.ud_qps * ud_queues;
  return b;
}

}  // namespace ohio
