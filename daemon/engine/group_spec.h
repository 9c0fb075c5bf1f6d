// What the ranks of a group told the daemon when they joined: the key they agreed on, where
// each rank lives, the algorithm and what its buffers are sized for. Plain data, apart from Group so that the join request's
// validation (and its fuzzer) need nothing of the segment or the transport.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shm/plan/node_level_design.h"
#include "shm/tables/internode_choice.h"

namespace ohio {

using GroupKey = std::array<uint8_t, 16>;

struct GroupSpec {
  GroupKey key{};
  std::vector<std::string> node_names;
  std::vector<uint32_t> rank_node;
  uint32_t node = 0;  // this daemon's index in node_names
  NodeLevelDesign design = NodeLevelDesign::kV3;
  std::optional<InterNodeAlgorithm> internode;  // forced by the job (OHIO_INTERNODE_ALGORITHM); none: the daemons' table
  uint64_t bytes_per_rank_hint = 0;  // what the buffers are sized for (0: configured)
  std::optional<GroupKey> replaces;  // the outgrown generation of a growing group, if this is one
};

}  // namespace ohio
