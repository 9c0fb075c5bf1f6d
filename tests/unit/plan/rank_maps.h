// Every placement of a few ranks on a few nodes, for exhaustive tests of the planner.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ohio {
namespace testing_util {

// All rank -> node maps of `ranks` ranks over `nodes` nodes (nodes^ranks of them), in
// lexicographic order, including maps that leave a node empty.
inline std::vector<std::vector<uint32_t>> AllMaps(uint32_t ranks, uint32_t nodes) {
  std::vector<std::vector<uint32_t>> maps;
  std::vector<uint32_t> m(ranks, 0);
  while (true) {
    maps.push_back(m);
    uint32_t i = 0;
    while (i < ranks && ++m[i] == nodes) m[i++] = 0;
    if (i == ranks) break;
  }
  return maps;
}

inline bool EveryNodeUsed(const std::vector<uint32_t>& map, uint32_t nodes) {
  std::vector<bool> used(nodes, false);
  for (uint32_t n : map) used[n] = true;
  for (bool u : used) {
    if (!u) return false;
  }
  return true;
}

// All maps of 1..max_ranks ranks over 1..max_nodes nodes where every node holds a rank.
struct RankMap {
  uint32_t nodes;
  std::vector<uint32_t> rank_node;
};

inline std::vector<RankMap> AllValidMaps(uint32_t max_ranks, uint32_t max_nodes) {
  std::vector<RankMap> out;
  for (uint32_t p = 1; p <= max_ranks; ++p) {
    for (uint32_t n = 1; n <= max_nodes && n <= p; ++n) {
      for (auto& m : AllMaps(p, n)) {
        if (EveryNodeUsed(m, n)) out.push_back({n, m});
      }
    }
  }
  return out;
}

inline std::string MapName(const std::vector<uint32_t>& map) {
  std::string s = "[";
  for (size_t i = 0; i < map.size(); ++i) s += (i ? "," : "") + std::to_string(map[i]);
  return s + "]";
}

}  // namespace testing_util
}  // namespace ohio
