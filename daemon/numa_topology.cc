#include "daemon/numa_topology.h"

#include <hwloc.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace ohio {
namespace {

CpuList Cpus(hwloc_const_bitmap_t set) {
  CpuList out;
  for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i)) out.push_back(static_cast<uint32_t>(i));
  return out;
}

// hwloc attaches a device it cannot place to the machine itself: that says nothing of which
// node it is near, so it counts as no locality.
CpuList DeviceCpus(hwloc_topology_t t, const std::string& device) {
  for (hwloc_obj_t o = hwloc_get_next_osdev(t, nullptr); o != nullptr; o = hwloc_get_next_osdev(t, o)) {
    if (o->name == nullptr || device != o->name) continue;
    hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(t, o);
    if (near == nullptr || near == hwloc_get_root_obj(t) || near->cpuset == nullptr) return {};
    return Cpus(near->cpuset);
  }
  return {};
}

}  // namespace

Result<NumaTopology> LoadNumaTopology(const std::string& xml_path, const std::vector<std::string>& rails) {
  hwloc_topology_t t = nullptr;
  if (hwloc_topology_init(&t) != 0) return Status(Code::kSystem, "hwloc_topology_init failed");
  std::unique_ptr<hwloc_topology, void (*)(hwloc_topology_t)> own(t, hwloc_topology_destroy);
  NumaTopology topo;
  topo.source = "hwloc";
  if (!xml_path.empty()) {
    if (hwloc_topology_set_xml(t, xml_path.c_str()) != 0) {
      return Status(Code::kInvalidArgument, "hwloc cannot read topology XML " + xml_path + ": " + std::strerror(errno));
    }
    topo.source = "hwloc XML file " + xml_path;
  }
  // HCAs are OS devices: kept only if asked for (hwloc drops I/O objects by default).
  hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(t) != 0) {
    return Status(Code::kSystem, "hwloc cannot load the topology from " + topo.source + ": " + std::strerror(errno));
  }
  for (hwloc_obj_t n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, nullptr); n != nullptr;
       n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n)) {
    topo.nodes.push_back(NumaNodeCpus{n->os_index, Cpus(n->cpuset)});
  }
  for (const std::string& rail : rails) {
    topo.rails.push_back(RailLocality{rail, DeviceCpus(t, rail.substr(0, rail.find(':')))});
  }
  return topo;
}

}  // namespace ohio
