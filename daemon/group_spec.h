// What the ranks of a group told the daemon when they joined: the key they agreed on, where
// each rank lives, and the algorithm. Plain data, apart from Group so that the join request's
// validation (and its fuzzer) need nothing of the segment or the transport.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "shm/algorithm.h"

namespace ohio {

using GroupKey = std::array<uint8_t, 16>;

struct GroupSpec {
  GroupKey key{};
  std::vector<std::string> node_names;
  std::vector<uint32_t> rank_node;
  uint32_t node = 0;  // this daemon's index in node_names
  Algorithm algorithm = Algorithm::kV3;
};

}  // namespace ohio
