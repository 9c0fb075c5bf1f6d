// Which rank lives on which node: the one input every layout and schedule is computed from.
// Pure data, no I/O; built once per group and shared by the daemon and the client library.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"

namespace ohio {

class GroupShape {
 public:
  // rank_node[g] is the node index (0..nodes-1) of group rank g. Every node must hold at
  // least one rank. PPN may differ between nodes and a node's ranks need not be consecutive.
  static Result<GroupShape> Make(uint32_t nodes, std::vector<uint32_t> rank_node);

  uint32_t size() const { return static_cast<uint32_t>(rank_node_.size()); }
  uint32_t nodes() const { return static_cast<uint32_t>(node_ranks_.size()); }
  uint32_t node_of(uint32_t rank) const { return rank_node_[rank]; }
  // Position of `rank` among the ranks of its node, in group-rank order.
  uint32_t local_index(uint32_t rank) const { return local_index_[rank]; }
  uint32_t ppn(uint32_t node) const { return static_cast<uint32_t>(node_ranks_[node].size()); }
  // Group rank of the l-th rank of `node`.
  uint32_t rank_at(uint32_t node, uint32_t l) const { return node_ranks_[node][l]; }
  // Ranks on nodes 0..node-1: where node's columns start in a coalesced row.
  uint32_t ranks_before(uint32_t node) const { return ranks_before_[node]; }
  uint32_t max_ppn() const { return max_ppn_; }
  const std::vector<uint32_t>& rank_node() const { return rank_node_; }

 private:
  std::vector<uint32_t> rank_node_;
  std::vector<uint32_t> local_index_;
  std::vector<std::vector<uint32_t>> node_ranks_;
  std::vector<uint32_t> ranks_before_;
  uint32_t max_ppn_ = 0;
};

}  // namespace ohio
