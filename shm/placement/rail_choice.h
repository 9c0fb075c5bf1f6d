// Which rail carries a group's puts to one peer node. A group prefers the rails
// nearest its segment's NUMA node (shm/placement/numa_plan.h), in tiers of equally near rails; the peer
// may be connected on fewer rails than this node has (rails pair by position: the first
// `connected` of them). Pure: the verbs transport calls it once per group and peer, at the
// group's first put there, and keeps the answer (daemon/transport/verbs/verbs_transport.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ohio {

// Rail indices (the transport's order), nearest first: the rails of one tier are equally near
// the group's node. Empty: the group has no preference (no node chosen, or no rails).
using RailTiers = std::vector<std::vector<uint32_t>>;

// The first tier holding a rail below `connected`; among that tier's rails below `connected`,
// the one at `key` modulo their number, so that groups spread over rails equally near them.
// With no such tier (no preference), rail `key` modulo `connected`: groups spread over all.
// `connected` must be at least 1.
size_t ChooseRail(const RailTiers& tiers, size_t connected, uint64_t key);

}  // namespace ohio
