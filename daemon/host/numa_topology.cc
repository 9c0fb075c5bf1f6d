#include "daemon/host/numa_topology.h"

#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

namespace ohio {
namespace {

// A device local to the whole machine says nothing of which node it is near: no locality.
CpuList Locality(hwloc_topology_t t, hwloc_const_bitmap_t cpus) {
  if (cpus == nullptr || hwloc_bitmap_iszero(cpus) || hwloc_bitmap_isincluded(hwloc_get_root_obj(t)->cpuset, cpus)) {
    return {};
  }
  return CpusOf(cpus);
}

// From an XML file: the OS device of that name, placed where hwloc attached it (a device it
// could not place hangs off the machine itself).
CpuList XmlDeviceCpus(hwloc_topology_t t, const std::string& device) {
  for (hwloc_obj_t o = hwloc_get_next_osdev(t, nullptr); o != nullptr; o = hwloc_get_next_osdev(t, o)) {
    if (o->name == nullptr || device != o->name) continue;
    hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(t, o);
    return near == nullptr ? CpuList{} : Locality(t, near->cpuset);
  }
  return {};
}

// On this machine: the device's local CPUs as the host topology reads them for everyone; the
// whole machine (what it answers when the kernel does not say, as for Soft-RoCE, which has no
// PCI device) is no locality.
CpuList HostDeviceCpus(const HostTopology& host, const std::string& device) {
  const CpuList cpus = host.HcaCpus(device);
  const CpuList machine = host.MachineCpus();
  return std::includes(cpus.begin(), cpus.end(), machine.begin(), machine.end()) ? CpuList{} : cpus;
}

}  // namespace

Result<NumaTopology> LoadNumaTopology(const std::string& xml_path, const std::vector<std::string>& rails,
                                      const HostTopology* host) {
  NumaTopology topo;
  topo.source = "hwloc";
  hwloc_topology_t t = nullptr;
  std::unique_ptr<hwloc_topology, void (*)(hwloc_topology_t)> own(nullptr, hwloc_topology_destroy);
  if (xml_path.empty()) {
    if (host == nullptr || host->get() == nullptr) {
      return Status(Code::kSystem, "hwloc cannot load the topology from hwloc: " +
                                       (host == nullptr ? std::string("not loaded") : host->error()));
    }
    t = host->get();
  } else {
    if (hwloc_topology_init(&t) != 0) return Status(Code::kSystem, "hwloc_topology_init failed");
    own.reset(t);
    if (hwloc_topology_set_xml(t, xml_path.c_str()) != 0) {
      return Status(Code::kInvalidArgument, "hwloc cannot read topology XML " + xml_path + ": " + std::strerror(errno));
    }
    topo.source = "hwloc XML file " + xml_path;
    // Its HCAs are OS devices, kept only if asked for (hwloc drops I/O objects by default).
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(t) != 0) {
      return Status(Code::kSystem, "hwloc cannot load the topology from " + topo.source + ": " + std::strerror(errno));
    }
  }
  for (hwloc_obj_t n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, nullptr); n != nullptr;
       n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n)) {
    topo.nodes.push_back(NumaNodeCpus{n->os_index, CpusOf(n->cpuset)});
  }
  for (const std::string& rail : rails) {
    const std::string device = rail.substr(0, rail.find(':'));
    CpuList cpus = xml_path.empty() ? HostDeviceCpus(*host, device) : XmlDeviceCpus(t, device);
    topo.rails.push_back(RailLocality{rail, std::move(cpus)});
  }
  return topo;
}

}  // namespace ohio
