// The peer service other nodes' daemons call (gRPC over TCP): Hello, then OpenGroup for every
// group the two nodes share, SideOpened once the caller's side of one is open, and GroupFailed
// when a group failed on the caller. Read-only: it answers from the registry. Every method first checks
// the caller's MUNGE credential (call metadata) and answers UNAUTHENTICATED, naming why, before
// it reads or changes anything.
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <string>

#include "daemon/control/group_registry.h"
#include "daemon/ops/config.h"
#include "daemon/peers/peer_auth.h"
#include "daemon/peers/peer_port_gate.h"
#include "daemon/transport/transport.h"
#include "daemon/transport/verbs/verbs_transport.h"
#include "proto/peer.grpc.pb.h"

namespace ohio {

class PeerService final : public peer::Peer::Service {
 public:
  // `verbs` is the transport again when it is the verbs one (it takes queue pair dials), else null.
  // `on_side_opened(key, node)`: `node` says its side of group `key` is open (PeerBootstrap).
  using OnSideOpened = std::function<void(const GroupKey&, const std::string&)>;
  // `gate`: the peer port's listener, told of each connection a call authenticates.
  PeerService(const DaemonConfig& config, PeerAuth* auth, PeerPortGate* gate, GroupRegistry* registry,
              Transport* transport, VerbsTransport* verbs, OnSideOpened on_side_opened)
      : config_(config),
        auth_(auth),
        gate_(gate),
        registry_(registry),
        transport_(transport),
        verbs_(verbs),
        on_side_opened_(std::move(on_side_opened)) {}

  grpc::Status Hello(grpc::ServerContext*, const peer::HelloRequest* req, peer::HelloReply* reply) override;
  grpc::Status OpenGroup(grpc::ServerContext*, const peer::OpenGroupRequest* req, peer::OpenGroupReply* reply) override;
  grpc::Status ConnectQueuePairs(grpc::ServerContext*, const peer::ConnectQueuePairsRequest* req,
                                 peer::ConnectQueuePairsReply* reply) override;
  grpc::Status GroupFailed(grpc::ServerContext*, const peer::GroupFailedRequest* req,
                           peer::GroupFailedReply*) override;
  grpc::Status SideOpened(grpc::ServerContext*, const peer::SideOpenedRequest* req, peer::SideOpenedReply*) override;

 private:
  // OK, or UNAUTHENTICATED with "node <this> refused the call: munge credential <reason>: ...".
  grpc::Status Authenticate(grpc::ServerContext* ctx, const char* method, const std::string& claimed_node);
  // FAILED_PRECONDITION: the caller speaks peer protocol `theirs`, not this daemon's.
  grpc::Status OtherProtocol(uint32_t theirs) const;

  const DaemonConfig& config_;
  PeerAuth* auth_;
  PeerPortGate* gate_;
  GroupRegistry* registry_;
  Transport* transport_;
  VerbsTransport* verbs_;
  OnSideOpened on_side_opened_;
};

}  // namespace ohio
