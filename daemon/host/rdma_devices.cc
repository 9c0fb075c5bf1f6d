#include "daemon/host/rdma_devices.h"

#include <endian.h>
#include <infiniband/verbs.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
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

// The device's local CPUs (the whole machine when the kernel does not say); its NUMA nodes
// follow from them.
void Place(const HostTopology& host, HcaInfo* hca) {
  if (host.get() == nullptr) return;
  const CpuList cpus = host.HcaCpus(hca->name);
  hca->local_cpus = CpuListText(cpus);
  hca->numa_nodes = host.NodesOf(cpus);
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

RdmaInventory ListRdmaDevices(const HostTopology& host) {
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
  if (host.get() == nullptr) inv.note = "hwloc cannot load the topology: NUMA placement unknown";
  for (int i = 0; i < n; ++i) {
    HcaInfo hca;
    hca.name = ibv_get_device_name(list[i]);
    hca.node_guid = Guid(ibv_get_device_guid(list[i]));
    Place(host, &hca);
    QueryPorts(list[i], &hca, &inv.note);
    inv.hcas.push_back(std::move(hca));
  }
  ibv_free_device_list(list);
  return inv;
}

}  // namespace ohio
