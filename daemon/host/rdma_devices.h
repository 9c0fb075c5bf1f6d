// The RDMA devices (HCAs) libibverbs lists on this node, with their ports and the NUMA nodes
// hwloc places them on: what an admin checks first when a node's rails look wrong.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "daemon/host/host_topology.h"

namespace ohio {

struct HcaPortInfo {
  uint32_t port = 0;
  std::string state;       // "active", "down", "init", ...
  std::string link_layer;  // "InfiniBand", "Ethernet" or "unspecified"
  uint32_t active_mtu = 0;
};

struct HcaInfo {
  std::string name;
  std::string node_guid;            // "0002:c903:0000:1234"
  std::vector<uint32_t> numa_nodes; // OS indexes
  std::string local_cpus;           // e.g. "0-15", "" if unknown
  std::vector<HcaPortInfo> ports;
};

struct RdmaInventory {
  std::vector<HcaInfo> hcas;
  std::string note;  // why the list is empty, or what could not be read
};

// Each HCA's locality as `host` reads it (HostTopology::HcaCpus).
RdmaInventory ListRdmaDevices(const HostTopology& host);

}  // namespace ohio
