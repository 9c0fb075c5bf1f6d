// The peer service other nodes' daemons call (gRPC over TCP): Hello, then OpenGroup for every
// group the two nodes share. Read-only: it answers from the registry.
#pragma once

#include <grpcpp/grpcpp.h>

#include "daemon/config.h"
#include "daemon/group_registry.h"
#include "daemon/transport/transport.h"
#include "daemon/transport/verbs_transport.h"
#include "proto/peer.grpc.pb.h"

namespace ohio {

class PeerService final : public peer::Peer::Service {
 public:
  // `verbs` is the transport again when it is the verbs one (it takes queue pair dials), else null.
  PeerService(const DaemonConfig& config, GroupRegistry* registry, Transport* transport, VerbsTransport* verbs)
      : config_(config), registry_(registry), transport_(transport), verbs_(verbs) {}

  grpc::Status Hello(grpc::ServerContext*, const peer::HelloRequest* req, peer::HelloReply* reply) override;
  grpc::Status OpenGroup(grpc::ServerContext*, const peer::OpenGroupRequest* req, peer::OpenGroupReply* reply) override;
  grpc::Status ConnectQueuePairs(grpc::ServerContext*, const peer::ConnectQueuePairsRequest* req,
                                 peer::ConnectQueuePairsReply* reply) override;

 private:
  const DaemonConfig& config_;
  GroupRegistry* registry_;
  Transport* transport_;
  VerbsTransport* verbs_;
};

}  // namespace ohio
