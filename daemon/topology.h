// What hwloc sees of this node, summarised for the start-up log and for Status.
#pragma once

#include <string>

namespace ohio {

// e.g. "1 package, 1 NUMA node, 2 cores, 2 PUs"; "unknown (hwloc: ...)" if hwloc fails.
std::string DescribeTopology();

}  // namespace ohio
