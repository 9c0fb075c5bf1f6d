// What a node's verbs transport keeps per rail for N nodes: queue pairs, and the memory of their
// queues and of the buffers the transport registers for them (daemon/transport/verbs/
// verbs_sizes.h), with one RC queue pair per peer node, or with the RC pool bounded and every
// other peer on the rail's one UD queue pair. The HCA's own per-queue-pair context (in its
// cache, or paged to host memory when the cache is full) is what the pool bounds too, but its
// size is the device's: not counted here.
#pragma once

#include <cstdint>

namespace ohio {

constexpr uint32_t kRcPoolUnlimited = UINT32_MAX;

struct QueuePairBudget {
  uint32_t peers = 0;     // other nodes
  uint32_t rc_qps = 0;    // per rail
  uint32_t ud_qps = 0;    // per rail: 1 if any peer is outside the pool, else 0
  uint64_t ring_bytes = 0;    // receive rings: the RC connections' and the UD queue pair's
  uint64_t bounce_bytes = 0;  // the rail's bounce slots, shared by every peer
  uint64_t queue_bytes = 0;   // send and receive queue entries, estimated
  uint64_t total_bytes() const { return ring_bytes + bounce_bytes + queue_bytes; }
};

// One rail of a node in a group of `nodes` nodes, with at most `rc_pool` RC queue pairs
// (kRcPoolUnlimited: one per peer, as the transport runs today).
QueuePairBudget PlanQueuePairs(uint32_t nodes, uint32_t rc_pool);

}  // namespace ohio
