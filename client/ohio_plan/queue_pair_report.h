// `ohio-plan --queue-pairs`: the queue pairs a node's verbs transport keeps for a group of N
// nodes, and the memory of their queues and buffers (daemon/transport/verbs/
// queue_pair_budget.h), with one RC queue pair per peer as the transport runs today and with
// the RC pool bounded (every other peer on one UD queue pair per rail). Pure, like plan_report.h.
#pragma once

#include <cstdint>
#include <string>

namespace ohio {

std::string RenderQueuePairs(uint32_t nodes, uint32_t rails, uint32_t rc_pool);

}  // namespace ohio
