#include "shm/placement/numa_plan.h"

#include <algorithm>

namespace ohio {
namespace {

size_t Common(const CpuList& a, const CpuList& b) {
  size_t n = 0;
  for (auto i = a.begin(), j = b.begin(); i != a.end() && j != b.end();) {
    if (*i < *j) {
      ++i;
    } else if (*j < *i) {
      ++j;
    } else {
      ++n, ++i, ++j;
    }
  }
  return n;
}

// 0: local to `node`; 1: no known locality; 2: local to another node only.
int Distance(const RailLocality& rail, const NumaNodeCpus* node) {
  if (rail.cpus.empty()) return 1;
  return Common(rail.cpus, node->cpus) > 0 ? 0 : 2;
}

}  // namespace

NumaPlacement PlanNumaPlacement(const std::vector<NumaNodeCpus>& nodes, const std::vector<CpuList>& rank_cpus,
                                const std::vector<RailLocality>& rails) {
  NumaPlacement p;
  for (const RailLocality& r : rails) p.rail_order.push_back(r.name);
  if (nodes.empty()) {
    p.why = "hwloc knows no NUMA node";
    return p;
  }
  std::vector<size_t> held(nodes.size(), 0);
  for (const CpuList& cpus : rank_cpus) {
    for (size_t n = 0; n < nodes.size(); ++n) held[n] += Common(cpus, nodes[n].cpus);
  }
  const size_t most = *std::max_element(held.begin(), held.end());
  // The lowest OS index among those holding the most, whatever order the topology lists them in.
  const NumaNodeCpus* best = nullptr;
  bool all_tie = true;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (held[n] != most) {
      all_tie = false;
    } else if (best == nullptr || nodes[n].os_index < best->os_index) {
      best = &nodes[n];
    }
  }
  std::string counts;
  for (size_t n = 0; n < nodes.size(); ++n) {
    counts += (counts.empty() ? "" : ", ") + std::to_string(held[n]) + " on node " + std::to_string(nodes[n].os_index);
  }
  const std::string tally = "the ranks' allowed CPUs: " + counts;
  if (all_tie) {
    p.why = (nodes.size() == 1 ? "one NUMA node" : "no node holds more of the ranks' CPUs than another") +
            std::string(" (") + tally + ")";
    if (nodes.size() > 1) return p;
  } else {
    p.why = tally;
  }
  p.node = best->os_index;
  std::vector<size_t> order(rails.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return Distance(rails[a], best) < Distance(rails[b], best); });
  for (size_t i = 0; i < order.size(); ++i) {
    p.rail_order[i] = rails[order[i]].name;
    const int d = Distance(rails[order[i]], best);
    if (i == 0 || d != Distance(rails[order[i - 1]], best)) p.rail_tiers.emplace_back();
    p.rail_tiers.back().push_back(static_cast<uint32_t>(order[i]));
  }
  return p;
}

std::string CpuListText(const CpuList& cpus) {
  std::string s;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(cpus[i]) + (j > i ? "-" + std::to_string(cpus[j]) : "");
    i = j + 1;
  }
  return s;
}

}  // namespace ohio
