#include "client/ohio_plan/queue_pair_report.h"

#include <cstdio>

#include "daemon/transport/verbs/queue_pair_budget.h"

namespace ohio {
namespace {

std::string MiB(uint64_t bytes) {
  char out[32];
  std::snprintf(out, sizeof(out), "%.1f MiB", static_cast<double>(bytes) / (1u << 20));
  return out;
}

std::string Row(const std::string& name, const QueuePairBudget& b, uint32_t rails) {
  char out[256];
  std::snprintf(out, sizeof(out), "  %-18s %8u %6u %14s %12s %12s %14s\n", name.c_str(), b.rc_qps * rails,
                b.ud_qps * rails, MiB(b.ring_bytes * rails).c_str(), MiB(b.bounce_bytes * rails).c_str(),
                MiB(b.queue_bytes * rails).c_str(), MiB(b.total_bytes() * rails).c_str());
  return out;
}

}  // namespace

std::string RenderQueuePairs(uint32_t nodes, uint32_t rails, uint32_t rc_pool) {
  std::string out = "queue pairs per node: " + std::to_string(nodes) + " nodes, " + std::to_string(rails) +
                    (rails == 1 ? " rail" : " rails") + ", whatever the ranks per node and the groups\n";
  char head[256];
  std::snprintf(head, sizeof(head), "  %-18s %8s %6s %14s %12s %12s %14s\n", "", "RC QPs", "UD QPs", "receive rings",
                "bounce", "queues", "total");
  out += head;
  out += Row("one RC per peer", PlanQueuePairs(nodes, kRcPoolUnlimited), rails);
  if (rc_pool != kRcPoolUnlimited) out += Row("rc-pool " + std::to_string(rc_pool), PlanQueuePairs(nodes, rc_pool), rails);
  out +=
      "receive rings: each RC connection's slots and the UD queue pair's (a datagram and its route header each)\n"
      "bounce: the rail's send slots, shared by every peer; queues: send and receive entries at mlx5's sizes\n"
      "not counted: the HCA's own state per queue pair, in the cache that a bounded pool keeps from thrashing\n";
  return out;
}

}  // namespace ohio
