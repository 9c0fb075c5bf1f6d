// A rail: one active port of one HCA, with what every queue pair on it shares: the device
// context, a protection domain, a completion queue and the completion channel the progress
// engine sleeps on. The daemon opens every active port (or the ones it is told to) and keeps
// one RC queue pair per peer node on each.
#pragma once

#include <hwloc.h>
#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/host/host_topology.h"

namespace ohio {

class Rail {
 public:
  ~Rail();
  Rail(const Rail&) = delete;
  Rail& operator=(const Rail&) = delete;

  const std::string& device() const { return device_; }
  uint8_t port() const { return port_; }
  std::string name() const { return device_ + ":" + std::to_string(port_); }
  ibv_context* context() const { return ctx_; }
  ibv_pd* pd() const { return pd_; }
  ibv_cq* cq() const { return cq_; }
  ibv_comp_channel* channel() const { return channel_; }
  const std::array<uint8_t, 16>& gid() const { return gid_; }
  int gid_index() const { return gid_index_; }
  uint16_t lid() const { return lid_; }
  ibv_mtu mtu() const { return mtu_; }
  bool ethernet() const { return ethernet_; }
  uint32_t max_sge() const { return max_sge_; }

  // Takes the completion channel's events and asks for one at the next completion, so that the
  // channel's fd wakes a progress engine about to sleep on it. Completions already queued raise
  // no event: poll the queue after this.
  Status ArmCompletions();

  // Anonymous memory bound to the device's NUMA node when hwloc knows it (bounce buffers are
  // read and written by the HCA on every bounced transfer). Freed with munmap.
  void* AllocateNear(size_t bytes) const;

 private:
  friend struct RailOpener;
  Rail() = default;
  void AckEvents();

  std::string device_;
  uint8_t port_ = 0;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  std::array<uint8_t, 16> gid_{};
  int gid_index_ = 0;
  uint16_t lid_ = 0;
  ibv_mtu mtu_ = IBV_MTU_1024;
  bool ethernet_ = false;
  uint32_t max_sge_ = 1;
  std::shared_ptr<const HostTopology> host_;  // loaded once for the daemon: loading takes milliseconds
  hwloc_bitmap_t nodeset_ = nullptr;          // the device's NUMA nodes, null if unknown
};

// Opens the rails: every active port of every device, or only those named in `wanted`
// ("mlx5_0" for all its active ports, "mlx5_0:1" for one). An error says why none could be
// used (no devices, none active, a named one missing or down); `gid_index` selects the GID
// (RoCE needs the right one; 0 is the port's link-local GID). Each rail's buffers go on the
// NUMA nodes `host` says its device is local to.
Result<std::vector<std::unique_ptr<Rail>>> OpenRails(const std::vector<std::string>& wanted, int gid_index,
                                                     std::shared_ptr<const HostTopology> host);

}  // namespace ohio
