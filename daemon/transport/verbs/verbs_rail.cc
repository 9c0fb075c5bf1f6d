#include "daemon/transport/verbs/verbs_rail.h"

#include <fcntl.h>
#include <hwloc.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ohio {

struct RailOpener {
  static Result<std::unique_ptr<Rail>> Open(ibv_device* dev, uint8_t port, int gid_index,
                                            std::shared_ptr<const HostTopology> host);
  static void PlaceOnNuma(Rail* r);
};

namespace {

// Deep enough for every queue pair of a large cluster's worth of peers on this rail.
constexpr int kWantedCqDepth = 65536;

}  // namespace

Rail::~Rail() {
  if (nodeset_ != nullptr) hwloc_bitmap_free(nodeset_);
  if (cq_ != nullptr) {
    AckEvents();  // destroying a queue waits for every event it raised to be acknowledged
    ibv_destroy_cq(cq_);
  }
  if (channel_ != nullptr) ibv_destroy_comp_channel(channel_);
  if (pd_ != nullptr) ibv_dealloc_pd(pd_);
  if (ctx_ != nullptr) ibv_close_device(ctx_);
}

void Rail::AckEvents() {
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  while (ibv_get_cq_event(channel_, &cq, &ctx) == 0) ibv_ack_cq_events(cq, 1);
}

Status Rail::ArmCompletions() {
  AckEvents();
  if (int e = ibv_req_notify_cq(cq_, 0); e != 0) return SystemError("arming the completion queue of " + name(), e);
  return Status::Ok();
}

void* Rail::AllocateNear(size_t bytes) const {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  if (nodeset_ != nullptr) {
    // Best effort: unbound memory still works, only further from the device.
    hwloc_set_area_membind(host_->get(), p, bytes, nodeset_, HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_BYNODESET);
  }
  std::memset(p, 0, bytes);  // fault the pages in where they were bound
  return p;
}

// The device's NUMA nodes follow from its local CPUs (the whole machine's when the kernel does
// not say), as the host topology reads them for the inventory and NUMA placement too.
void RailOpener::PlaceOnNuma(Rail* r) {
  if (r->host_ == nullptr || r->host_->get() == nullptr) return;
  const std::vector<uint32_t> nodes = r->host_->NodesOf(r->host_->HcaCpus(r->device_));
  if (nodes.empty()) return;
  r->nodeset_ = hwloc_bitmap_alloc();
  for (uint32_t n : nodes) hwloc_bitmap_set(r->nodeset_, n);
}

Result<std::unique_ptr<Rail>> RailOpener::Open(ibv_device* dev, uint8_t port, int gid_index,
                                               std::shared_ptr<const HostTopology> host) {
  std::unique_ptr<Rail> r(new Rail());
  r->host_ = std::move(host);
  r->device_ = ibv_get_device_name(dev);
  r->port_ = port;
  r->gid_index_ = gid_index;
  const std::string where = r->name();
  r->ctx_ = ibv_open_device(dev);
  if (r->ctx_ == nullptr) return SystemError("opening RDMA device " + r->device_, errno);
  ibv_device_attr dattr;
  if (int e = ibv_query_device(r->ctx_, &dattr); e != 0) return SystemError("querying " + r->device_, e);
  ibv_port_attr pattr;
  if (int e = ibv_query_port(r->ctx_, port, &pattr); e != 0) return SystemError("querying port " + where, e);
  if (pattr.state != IBV_PORT_ACTIVE) {
    return Status(Code::kNotSupported, "port " + where + " is " + ibv_port_state_str(pattr.state));
  }
  ibv_gid gid;
  if (int e = ibv_query_gid(r->ctx_, port, gid_index, &gid); e != 0) {
    return SystemError("reading GID " + std::to_string(gid_index) + " of " + where, e);
  }
  std::memcpy(r->gid_.data(), gid.raw, 16);
  r->ethernet_ = pattr.link_layer == IBV_LINK_LAYER_ETHERNET;
  if (r->ethernet_ && std::all_of(r->gid_.begin(), r->gid_.end(), [](uint8_t b) { return b == 0; })) {
    return Status(Code::kNotSupported, "GID " + std::to_string(gid_index) + " of " + where +
                                          " is empty (RoCE needs a GID with an address; try another --gid-index)");
  }
  r->lid_ = pattr.lid;
  r->mtu_ = pattr.active_mtu;
  r->max_sge_ = static_cast<uint32_t>(std::max(1, dattr.max_sge));
  const int cq_depth = std::min(kWantedCqDepth, dattr.max_cqe);
  r->pd_ = ibv_alloc_pd(r->ctx_);
  if (r->pd_ == nullptr) return SystemError("allocating a protection domain on " + r->device_, errno);
  r->channel_ = ibv_create_comp_channel(r->ctx_);
  if (r->channel_ == nullptr) return SystemError("creating a completion channel on " + r->device_, errno);
  // The progress engine drains the channel before it sleeps; it must never block there.
  const int flags = fcntl(r->channel_->fd, F_GETFL);
  if (fcntl(r->channel_->fd, F_SETFL, flags | O_NONBLOCK) != 0) return SystemError("fcntl", errno);
  r->cq_ = ibv_create_cq(r->ctx_, cq_depth, nullptr, r->channel_, 0);
  if (r->cq_ == nullptr) return SystemError("creating a completion queue on " + r->device_, errno);
  PlaceOnNuma(r.get());
  return r;
}

Result<std::vector<std::unique_ptr<Rail>>> OpenRails(const std::vector<std::string>& wanted, int gid_index,
                                                     std::shared_ptr<const HostTopology> host) {
  int n = 0;
  errno = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) {
    return Status(Code::kNotSupported, errno == ENOSYS ? "the kernel has no RDMA support loaded (ib_uverbs)"
                                                      : std::string("cannot list RDMA devices: ") + std::strerror(errno));
  }
  std::vector<std::unique_ptr<Rail>> rails;
  std::vector<std::string> problems;
  std::vector<bool> matched(wanted.size(), false);
  for (int i = 0; i < n; ++i) {
    const std::string dev = ibv_get_device_name(list[i]);
    ibv_context* ctx = ibv_open_device(list[i]);
    if (ctx == nullptr) {
      problems.push_back(dev + ": cannot open (" + std::strerror(errno) + ")");
      continue;
    }
    ibv_device_attr attr;
    const int ports = ibv_query_device(ctx, &attr) == 0 ? attr.phys_port_cnt : 0;
    ibv_close_device(ctx);
    for (int p = 1; p <= ports; ++p) {
      const std::string name = dev + ":" + std::to_string(p);
      bool named = wanted.empty();
      for (size_t w = 0; w < wanted.size(); ++w) {
        if (wanted[w] == dev || wanted[w] == name) named = matched[w] = true;
      }
      if (!named) continue;
      auto rail = RailOpener::Open(list[i], static_cast<uint8_t>(p), gid_index, host);
      if (rail.ok()) {
        rails.push_back(std::move(rail.value()));
      } else {
        problems.push_back(rail.status().message());
      }
    }
  }
  ibv_free_device_list(list);
  std::string why;
  for (size_t w = 0; w < wanted.size(); ++w) {
    if (!matched[w]) problems.push_back("no RDMA device or port " + wanted[w]);
  }
  for (const auto& p : problems) why += (why.empty() ? "" : "; ") + p;
  if (!wanted.empty() && !problems.empty()) return Status(Code::kNotSupported, why);
  if (rails.empty()) {
    return Status(Code::kNotSupported, n == 0 ? "libibverbs lists no RDMA devices" : "no active RDMA port (" + why + ")");
  }
  return rails;
}

}  // namespace ohio
