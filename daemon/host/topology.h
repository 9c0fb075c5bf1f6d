// What hwloc sees of this node, summarised for the start-up log and for Status.
#pragma once

#include <string>

#include "daemon/host/host_topology.h"

namespace ohio {

// e.g. "1 package, 1 NUMA node, 2 cores, 2 PUs"; "unknown (hwloc_topology_load failed: ...)"
// if hwloc could not load it.
std::string DescribeTopology(const HostTopology& host);

}  // namespace ohio
