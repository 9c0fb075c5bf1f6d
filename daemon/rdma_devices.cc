#include "daemon/rdma_devices.h"

#include <endian.h>
#include <hwloc.h>
#include <hwloc/openfabrics-verbs.h>
#include <infiniband/verbs.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ohio {
namespace {

std::string PortState(enum ibv_port_state s) {
  std::string name = ibv_port_state_str(s);  // "PORT_ACTIVE"
  if (name.rfind("PORT_", 0) == 0) name = name.substr(5);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::string LinkLayer(uint8_t l) {
  switch (l) {
    case IBV_LINK_LAYER_INFINIBAND:
      return "InfiniBand";
    case IBV_LINK_LAYER_ETHERNET:
      return "Ethernet";
    default:
      return "unspecified";
  }
}

std::string Guid(uint64_t be) {
  const uint64_t g = be64toh(be);
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%04x:%04x:%04x:%04x", static_cast<unsigned>(g >> 48) & 0xffff,
                static_cast<unsigned>(g >> 32) & 0xffff, static_cast<unsigned>(g >> 16) & 0xffff,
                static_cast<unsigned>(g) & 0xffff);
  return buf;
}

// hwloc reads the device's local CPUs from sysfs; its NUMA nodes follow from them.
void Place(hwloc_topology_t topo, struct ibv_device* dev, HcaInfo* hca) {
  if (topo == nullptr) return;
  hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
  hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
  if (hwloc_ibv_get_device_cpuset(topo, dev, cpus) == 0) {
    char* list = nullptr;
    if (hwloc_bitmap_list_asprintf(&list, cpus) >= 0 && list != nullptr) hca->local_cpus = list;
    std::free(list);
    hwloc_cpuset_to_nodeset(topo, cpus, nodes);
    for (int i = hwloc_bitmap_first(nodes); i >= 0; i = hwloc_bitmap_next(nodes, i)) {
      hca->numa_nodes.push_back(static_cast<uint32_t>(i));
    }
  }
  hwloc_bitmap_free(nodes);
  hwloc_bitmap_free(cpus);
}

void QueryPorts(struct ibv_device* dev, HcaInfo* hca, std::string* note) {
  struct ibv_context* ctx = ibv_open_device(dev);
  if (ctx == nullptr) {
    *note += (note->empty() ? "" : "; ") + hca->name + ": cannot open (" + std::strerror(errno) + ")";
    return;
  }
  struct ibv_device_attr attr;
  if (ibv_query_device(ctx, &attr) == 0) {
    for (uint32_t p = 1; p <= attr.phys_port_cnt; ++p) {
      struct ibv_port_attr pa;
      if (ibv_query_port(ctx, static_cast<uint8_t>(p), &pa) != 0) continue;
      HcaPortInfo port;
      port.port = p;
      port.state = PortState(pa.state);
      port.link_layer = LinkLayer(pa.link_layer);
      port.active_mtu = pa.active_mtu >= IBV_MTU_256 ? 128u << pa.active_mtu : 0;
      hca->ports.push_back(port);
    }
  }
  ibv_close_device(ctx);
}

}  // namespace

RdmaInventory ListRdmaDevices() {
  RdmaInventory inv;
  int n = 0;
  errno = 0;
  struct ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) {
    // ENOSYS: the kernel offers no RDMA at all (no ib_uverbs), which is a list of none.
    inv.note = errno == ENOSYS ? "libibverbs lists no RDMA devices: the kernel has no RDMA support loaded (ib_uverbs)"
                               : std::string("libibverbs cannot list RDMA devices: ") + std::strerror(errno);
    return inv;
  }
  if (n == 0) {
    ibv_free_device_list(list);
    inv.note = "libibverbs lists no RDMA devices on this node";
    return inv;
  }
  hwloc_topology_t topo = nullptr;
  if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
    if (topo != nullptr) hwloc_topology_destroy(topo);
    topo = nullptr;
    inv.note = "hwloc cannot load the topology: NUMA placement unknown";
  }
  for (int i = 0; i < n; ++i) {
    HcaInfo hca;
    hca.name = ibv_get_device_name(list[i]);
    hca.node_guid = Guid(ibv_get_device_guid(list[i]));
    Place(topo, list[i], &hca);
    QueryPorts(list[i], &hca, &inv.note);
    inv.hcas.push_back(std::move(hca));
  }
  if (topo != nullptr) hwloc_topology_destroy(topo);
  ibv_free_device_list(list);
  return inv;
}

}  // namespace ohio
