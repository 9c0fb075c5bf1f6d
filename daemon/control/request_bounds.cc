#include "daemon/control/request_bounds.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "daemon/ops/host_pattern.h"
#include "shm/tables/internode_choice.h"

namespace ohio {
namespace {

// Bytes of a protobuf varint holding v.
uint64_t VarintBytes(uint64_t v) {
  uint64_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// A length-delimited field of `bytes` bytes: tag, length, bytes.
uint64_t DelimitedBytes(uint64_t bytes) { return 1 + VarintBytes(bytes) + bytes; }

// The largest s with s * s <= limit.
uint64_t FloorSqrt(uint64_t limit) {
  uint64_t s = static_cast<uint64_t>(std::sqrt(static_cast<long double>(limit)));
  while (s > 0 && s * s > limit) --s;
  while ((s + 1) * (s + 1) <= limit) ++s;
  return s;
}

}  // namespace

RequestBounds ComputeRequestBounds(const DaemonConfig& config) {
  RequestBounds b;
  // Nodes: this one, the peers table's, and any number peer-hosts admits.
  size_t longest_name = config.node_name.size();
  uint64_t nodes = 1;
  for (const std::string& entry : config.peers) {
    const std::string name = entry.substr(0, entry.find('='));
    longest_name = std::max(longest_name, name.size());
    if (name != config.node_name) ++nodes;
  }
  if (!config.peer_hosts.empty()) nodes = config.max_group_ranks;
  nodes = std::min<uint64_t>(nodes, config.max_group_ranks);
  longest_name = std::max(longest_name, HostPatterns::kLongestHostName);
  // Ranks: every message of the fullest node needs a byte of SSB. On one node the SSB is
  // split in two halves; over N nodes the fullest holds at least ceil(size / N) ranks, so
  // size^2 / N <= ssb-bytes, and size <= ssb-bytes as a node holds at least one rank.
  uint64_t ranks = FloorSqrt(config.ssb_bytes / 2);
  if (nodes > 1) {
    const long double over_nodes = static_cast<long double>(config.ssb_bytes) * static_cast<long double>(nodes);
    const uint64_t spread = over_nodes >= 1.8e19L ? UINT64_MAX : FloorSqrt(static_cast<uint64_t>(over_nodes));
    ranks = std::max(ranks, std::min<uint64_t>(spread, config.ssb_bytes));
  }
  ranks = std::max<uint64_t>(1, std::min<uint64_t>(ranks, config.max_group_ranks));
  nodes = std::min(nodes, ranks);
  b.max_nodes = static_cast<uint32_t>(nodes);
  b.max_ranks = static_cast<uint32_t>(ranks);
  b.max_node_name_bytes = longest_name;

  // The join with every field at its longest; rank_node counted unpacked (a tag per rank),
  // the longer of the two encodings a client may use.
  uint64_t join = DelimitedBytes(16);                      // key
  join += 2 * (1 + VarintBytes(UINT32_MAX));               // size, rank
  join += ranks * DelimitedBytes(longest_name);            // node_names, one per rank at most
  join += ranks * (1 + VarintBytes(ranks - 1)) + 1 + 5;    // rank_node (into the names), or its packed header
  join += DelimitedBytes(2);                               // algorithm: v1 | v2 | v3
  join += 1 + VarintBytes(UINT64_MAX);                     // bytes_per_rank_hint
  join += DelimitedBytes(16);                              // replaces_key
  size_t internode = 4;                                    // "auto"
  for (InterNodeAlgorithm a : {InterNodeAlgorithm::kPairwise, InterNodeAlgorithm::kHypercube,
                               InterNodeAlgorithm::kDirect}) {
    internode = std::max(internode, std::string(InterNodeAlgorithmName(a)).size());
  }
  join += DelimitedBytes(internode);
  const uint64_t message = DelimitedBytes(join);  // the ClientMessage's join field
  b.max_request_bytes = std::min<uint64_t>(message, config.max_message_bytes);
  return b;
}

std::string DescribeRequestBounds(const RequestBounds& bounds) {
  return "a join for a group of at most " + std::to_string(bounds.max_ranks) + " ranks on at most " +
         std::to_string(bounds.max_nodes) + " node(s), as max-group-ranks, ssb-bytes and the cluster's nodes allow";
}

}  // namespace ohio
