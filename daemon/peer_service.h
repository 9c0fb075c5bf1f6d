// The peer service other nodes' daemons call (gRPC over TCP): Hello, then OpenGroup for every
// group the two nodes share, and GroupFailed when a group failed on the caller. Read-only: it answers from the registry. Every method first checks
// the caller's MUNGE credential (call metadata) and answers UNAUTHENTICATED, naming why, before
// it reads or changes anything.
#pragma once

#include <grpcpp/grpcpp.h>

#include "daemon/config.h"
#include "daemon/group_registry.h"
#include "daemon/peer_auth.h"
#include "daemon/transport/transport.h"
#include "daemon/transport/verbs_transport.h"
#include "proto/peer.grpc.pb.h"

namespace ohio {

class PeerService final : public peer::Peer::Service {
 public:
  // `verbs` is the transport again when it is the verbs one (it takes queue pair dials), else null.
  PeerService(const DaemonConfig& config, PeerAuth* auth, GroupRegistry* registry, Transport* transport,
              VerbsTransport* verbs)
      : config_(config), auth_(auth), registry_(registry), transport_(transport), verbs_(verbs) {}

  grpc::Status Hello(grpc::ServerContext*, const peer::HelloRequest* req, peer::HelloReply* reply) override;
  grpc::Status OpenGroup(grpc::ServerContext*, const peer::OpenGroupRequest* req, peer::OpenGroupReply* reply) override;
  grpc::Status ConnectQueuePairs(grpc::ServerContext*, const peer::ConnectQueuePairsRequest* req,
                                 peer::ConnectQueuePairsReply* reply) override;
  grpc::Status GroupFailed(grpc::ServerContext*, const peer::GroupFailedRequest* req,
                           peer::GroupFailedReply*) override;

 private:
  // OK, or UNAUTHENTICATED with "node <this> refused the call: munge credential <reason>: ...".
  grpc::Status Authenticate(grpc::ServerContext* ctx, const char* method, const std::string& claimed_node);

  const DaemonConfig& config_;
  PeerAuth* auth_;
  GroupRegistry* registry_;
  Transport* transport_;
  VerbsTransport* verbs_;
};

}  // namespace ohio
