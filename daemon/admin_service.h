// The admin API (gRPC on a root-owned unix socket), for ohioctl and for tests that ask the
// daemon what it holds.
#pragma once

#include <chrono>

#include <grpcpp/grpcpp.h>

#include "daemon/config.h"
#include "daemon/counters.h"
#include "daemon/group_registry.h"
#include "daemon/transport/transport.h"
#include "proto/admin.grpc.pb.h"

namespace ohio {

class AdminService final : public admin::Admin::Service {
 public:
  AdminService(const DaemonConfig& config, GroupRegistry* registry, Transport* transport, DaemonCounters* counters,
               std::string topology)
      : config_(config),
        registry_(registry),
        transport_(transport),
        counters_(counters),
        topology_(std::move(topology)),
        started_(std::chrono::steady_clock::now()) {}

  grpc::Status Status(grpc::ServerContext*, const admin::StatusRequest*, admin::StatusReply* reply) override;

 private:
  const DaemonConfig& config_;
  GroupRegistry* registry_;
  Transport* transport_;
  DaemonCounters* counters_;
  std::string topology_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace ohio
