// The admin API (gRPC on a root-owned unix socket), for ohioctl, the metrics file and tests
// that ask the daemon what it holds: status and settings, peers, groups, counters (also as a
// stream), and a health verdict.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

#include <grpcpp/grpcpp.h>

#include "daemon/control/control_socket_counters.h"
#include "daemon/control/group_registry.h"
#include "daemon/control/hand_back_pages.h"
#include "daemon/engine/counters.h"
#include "daemon/engine/progress_engine.h"
#include "daemon/host/rdma_devices.h"
#include "daemon/ops/config.h"
#include "daemon/ops/live_config.h"
#include "daemon/peers/peer_auth.h"
#include "daemon/peers/peer_bootstrap.h"
#include "daemon/peers/peer_port_gate.h"
#include "daemon/transport/transport.h"
#include "proto/admin.grpc.pb.h"

namespace ohio {

class AdminService final : public admin::Admin::Service {
 public:
  struct Parts {
    const DaemonConfig* startup = nullptr;  // what the daemon was started with
    LiveConfig* live = nullptr;             // what is in force now
    GroupRegistry* registry = nullptr;
    Transport* transport = nullptr;
    DaemonCounters* counters = nullptr;
    const ControlSocketCounters* control_socket = nullptr;
    HandBackPages* hand_back_pages = nullptr;
    const PeerAuth* auth = nullptr;
    const PeerPortGate* peer_gate = nullptr;
    ProgressEngine* engine = nullptr;
    PeerBootstrap* bootstrap = nullptr;
    std::string topology;
    RdmaInventory rdma;
    std::string transport_choice;  // why this transport runs, for Status
  };
  explicit AdminService(Parts parts) : p_(std::move(parts)), started_(std::chrono::steady_clock::now()) {}

  grpc::Status Status(grpc::ServerContext*, const admin::StatusRequest*, admin::StatusReply* reply) override;
  grpc::Status ListPeers(grpc::ServerContext*, const admin::ListPeersRequest*, admin::ListPeersReply* reply) override;
  grpc::Status ListGroups(grpc::ServerContext*, const admin::ListGroupsRequest*,
                          admin::ListGroupsReply* reply) override;
  grpc::Status Counters(grpc::ServerContext*, const admin::CountersRequest*, admin::CountersReply* reply) override;
  grpc::Status Watch(grpc::ServerContext* ctx, const admin::WatchRequest* req,
                     grpc::ServerWriter<admin::CountersReply>* writer) override;
  grpc::Status Health(grpc::ServerContext*, const admin::HealthRequest*, admin::HealthReply* reply) override;

  admin::CountersReply CountersSnapshot();
  admin::HealthReply CheckHealth();
  // One line for systemd's STATUS=.
  std::string Summary();
  // Ends every Watch stream now (they would otherwise hold the server's shutdown).
  void Shutdown();

 private:
  uint64_t uptime_seconds() const;

  Parts p_;
  std::chrono::steady_clock::time_point started_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool shutting_down_ = false;
};

}  // namespace ohio
