#include "shm/plan/group_shape.h"

#include <algorithm>
#include <string>

namespace ohio {

Result<GroupShape> GroupShape::Make(uint32_t nodes, std::vector<uint32_t> rank_node) {
  if (rank_node.empty()) return Status(Code::kInvalidArgument, "a group needs at least one rank");
  if (nodes == 0) return Status(Code::kInvalidArgument, "a group needs at least one node");
  // Checked before anything is sized by `nodes`: every node needs a rank of its own.
  if (nodes > rank_node.size()) {
    return Status(Code::kInvalidArgument, "a group of " + std::to_string(rank_node.size()) + " ranks cannot span " +
                                              std::to_string(nodes) + " nodes");
  }
  GroupShape shape;
  shape.node_ranks_.resize(nodes);
  shape.local_index_.resize(rank_node.size());
  for (uint32_t g = 0; g < rank_node.size(); ++g) {
    uint32_t node = rank_node[g];
    if (node >= nodes) {
      return Status(Code::kInvalidArgument, "rank " + std::to_string(g) + " is placed on node " +
                                                std::to_string(node) + " but the group has " +
                                                std::to_string(nodes) + " nodes");
    }
    shape.local_index_[g] = static_cast<uint32_t>(shape.node_ranks_[node].size());
    shape.node_ranks_[node].push_back(g);
  }
  shape.ranks_before_.resize(nodes);
  uint32_t before = 0;
  for (uint32_t j = 0; j < nodes; ++j) {
    if (shape.node_ranks_[j].empty()) {
      return Status(Code::kInvalidArgument, "node " + std::to_string(j) + " has no ranks");
    }
    shape.ranks_before_[j] = before;
    before += static_cast<uint32_t>(shape.node_ranks_[j].size());
    shape.max_ppn_ = std::max(shape.max_ppn_, static_cast<uint32_t>(shape.node_ranks_[j].size()));
  }
  shape.rank_node_ = std::move(rank_node);
  return shape;
}

}  // namespace ohio
