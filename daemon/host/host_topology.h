// This machine as hwloc sees it, loaded once at start and shared by everything that asks hwloc
// about it: the start-up description (topology.h), the RDMA inventory (rdma_devices.h), the
// rails' buffers (transport/verbs/verbs_rail.h) and NUMA placement (numa_topology.h). Also the one
// place an HCA's locality is read from, so that the inventory, the rails and the placement
// planner cannot disagree about it.
#pragma once

#include <hwloc.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shm/placement/numa_plan.h"

namespace ohio {

// The CPUs (or NUMA nodes) of an hwloc bitmap, in order.
CpuList CpusOf(hwloc_const_bitmap_t set);

class HostTopology {
 public:
  // Never null: when hwloc cannot load the topology, get() is null and error() says why.
  static std::shared_ptr<const HostTopology> Load();
  ~HostTopology();
  HostTopology(const HostTopology&) = delete;
  HostTopology& operator=(const HostTopology&) = delete;

  hwloc_topology_t get() const { return t_; }
  const std::string& error() const { return error_; }

  // The CPUs HCA `device` is local to, as the kernel says (sysfs local_cpus, what
  // hwloc_ibv_get_device_cpuset reads); as that function, the whole machine when the kernel
  // does not say (Soft-RoCE has no PCI device). Empty when nothing is loaded.
  CpuList HcaCpus(const std::string& device) const;
  // The NUMA nodes (OS indexes) holding any of `cpus`.
  std::vector<uint32_t> NodesOf(const CpuList& cpus) const;
  // Every CPU of the machine (root object), to tell a device local to all of it.
  CpuList MachineCpus() const;

 private:
  HostTopology() = default;
  hwloc_topology_t t_ = nullptr;
  std::string error_;
};

}  // namespace ohio
