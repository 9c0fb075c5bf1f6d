#include "daemon/host/host_topology.h"

#include <hwloc/linux.h>

#include <cerrno>
#include <cstring>

namespace ohio {

CpuList CpusOf(hwloc_const_bitmap_t set) {
  CpuList out;
  for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i)) out.push_back(static_cast<uint32_t>(i));
  return out;
}

std::shared_ptr<const HostTopology> HostTopology::Load() {
  std::shared_ptr<HostTopology> h(new HostTopology());
  hwloc_topology_t t = nullptr;
  if (hwloc_topology_init(&t) != 0) {
    h->error_ = std::string("hwloc_topology_init failed: ") + std::strerror(errno);
    return h;
  }
  if (hwloc_topology_load(t) != 0) {
    h->error_ = std::string("hwloc_topology_load failed: ") + std::strerror(errno);
    hwloc_topology_destroy(t);
    return h;
  }
  h->t_ = t;
  return h;
}

HostTopology::~HostTopology() {
  if (t_ != nullptr) hwloc_topology_destroy(t_);
}

CpuList HostTopology::HcaCpus(const std::string& device) const {
  if (t_ == nullptr) return {};
  // Not through hwloc's I/O discovery, which loads every I/O plugin installed (OpenCL, CUDA,
  // ...): seconds at start, and threads of their own.
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  const std::string path = "/sys/class/infiniband/" + device + "/device/local_cpus";
  if (hwloc_linux_read_path_as_cpumask(path.c_str(), set) < 0 || hwloc_bitmap_iszero(set)) {
    hwloc_bitmap_copy(set, hwloc_topology_get_complete_cpuset(t_));
  }
  CpuList out = CpusOf(set);
  hwloc_bitmap_free(set);
  return out;
}

std::vector<uint32_t> HostTopology::NodesOf(const CpuList& cpus) const {
  if (t_ == nullptr) return {};
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
  for (uint32_t c : cpus) hwloc_bitmap_set(set, c);
  hwloc_cpuset_to_nodeset(t_, set, nodes);
  const CpuList out = CpusOf(nodes);
  hwloc_bitmap_free(nodes);
  hwloc_bitmap_free(set);
  return out;
}

CpuList HostTopology::MachineCpus() const {
  return t_ == nullptr ? CpuList{} : CpusOf(hwloc_get_root_obj(t_)->cpuset);
}

}  // namespace ohio
