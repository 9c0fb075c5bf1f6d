#include "daemon/host/topology.h"

#include <hwloc.h>

namespace ohio {
namespace {

std::string Count(hwloc_topology_t t, hwloc_obj_type_t type, const char* one, const char* many) {
  int n = hwloc_get_nbobjs_by_type(t, type);
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

std::string DescribeTopology(const HostTopology& host) {
  hwloc_topology_t t = host.get();
  if (t == nullptr) return "unknown (" + host.error() + ")";
  return Count(t, HWLOC_OBJ_PACKAGE, "package", "packages") + ", " +
         Count(t, HWLOC_OBJ_NUMANODE, "NUMA node", "NUMA nodes") + ", " + Count(t, HWLOC_OBJ_CORE, "core", "cores") +
         ", " + Count(t, HWLOC_OBJ_PU, "PU", "PUs");
}

}  // namespace ohio
