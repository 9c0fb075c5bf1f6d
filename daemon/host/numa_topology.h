// The NUMA nodes of this node and the locality of its rails, as hwloc sees them, read once at
// start into plain lists for the placement planner (shm/placement/numa_plan.h). From the machine itself,
// or from an hwloc XML file (ohiod --topology-xml: for tests and debugging on machines that do
// not have the topology to be checked; placement is then planned for the file's machine and
// bound on this one, which may refuse it).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/host/host_topology.h"
#include "shm/placement/numa_plan.h"

namespace ohio {

struct NumaTopology {
  std::string source;  // "hwloc" or "hwloc XML file PATH"
  std::vector<NumaNodeCpus> nodes;
  std::vector<RailLocality> rails;  // one per rail asked for, in that order
};

// `rails`: the transport's rails, "device:port" (or "device"); a rail whose device hwloc does
// not list as an OS device gets no locality. `xml_path` empty: this machine, as `host` loaded
// it, each rail's locality from host.HcaCpus (which the RDMA inventory and the rails' own
// buffers use too); `host` is only read then.
Result<NumaTopology> LoadNumaTopology(const std::string& xml_path, const std::vector<std::string>& rails,
                                      const HostTopology* host);

}  // namespace ohio
