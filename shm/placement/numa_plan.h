// Where a group's segment should live and in which order its rails should be tried: the NUMA
// node nearest the group's ranks on this node, and the HCAs nearest that node
// first. Pure: the topology comes in as plain CPU lists (daemon/host/numa_topology.h reads them
// with hwloc), the ranks' CPUs as each rank's affinity (daemon/host/segment_placement.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shm/placement/rail_choice.h"

namespace ohio {

// CPU lists are OS CPU numbers, sorted, without repeats.
using CpuList = std::vector<uint32_t>;

struct NumaNodeCpus {
  uint32_t os_index = 0;
  CpuList cpus;
};

// An HCA and the CPUs hwloc says it is local to (its PCI bus's); empty when hwloc knows no
// locality for it (Soft-RoCE and other virtual devices, or a device attached to the whole
// machine).
struct RailLocality {
  std::string name;
  CpuList cpus;
};

struct NumaPlacement {
  std::optional<uint32_t> node;  // OS index; none: no node is nearer the ranks than another
  std::string why;               // one line an admin can check the choice against
  std::vector<std::string> rail_order;
  // rail_order as indices of the rails planned for, cut where the distance to the node
  // changes: what the verbs transport picks a group's rail from (shm/placement/rail_choice.h). Empty with
  // no node, so that such a group spreads over the rails as if it had no placement.
  RailTiers rail_tiers;
};

// The node whose CPUs hold the most of the ranks' allowed CPUs (each rank counted with every
// CPU it may run on, so unpinned ranks weigh on every node alike), the lowest of those tied;
// none when every node ties (ranks spread over all of them, or unpinned, or no node known).
// A rank whose affinity could not be read is passed as an empty list and counts nowhere.
// Rails: those local to the chosen node first, then those with no known locality, then those
// local to other nodes; each kind in the configured order (and a tier of rail_tiers). With no
// node, the configured order and no tiers.
NumaPlacement PlanNumaPlacement(const std::vector<NumaNodeCpus>& nodes, const std::vector<CpuList>& rank_cpus,
                                const std::vector<RailLocality>& rails);

// "0-3,8,10-11": the form of Cpus_allowed_list and of hwloc's lists.
std::string CpuListText(const CpuList& cpus);

}  // namespace ohio
