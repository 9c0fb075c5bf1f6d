#include "daemon/peers/peer_service.h"

#include <spdlog/spdlog.h>

#include "common/version.h"
#include "daemon/peers/endpoint_proto.h"

namespace ohio {

grpc::Status PeerService::OtherProtocol(uint32_t theirs) const {
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "node " + config_.node_name + " speaks peer protocol " +
                                                                 std::to_string(kPeerProtocolVersion) + ", not " +
                                                                 std::to_string(theirs));
}

grpc::Status PeerService::Authenticate(grpc::ServerContext* ctx, const char* method, const std::string& claimed_node) {
  std::string credential;
  auto it = ctx->client_metadata().find(kMungeMetadataKey);
  if (it != ctx->client_metadata().end()) credential.assign(it->second.data(), it->second.size());
  // A call whose caller has gone is not checked: its check would only delay the live ones'.
  if (ctx->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "the caller gave up");
  Status s = auth_->Check(AuthChannel::kPeerCall, method, credential,
                          "'" + claimed_node + "' at " + gate_->RemoteAddress(ctx->peer()),
                          PeerAuth::AnswerBy(ctx->deadline()));
  if (s.ok()) {
    gate_->Authenticated(ctx->peer());
    return grpc::Status::OK;
  }
  // munged busy: no verdict, so the caller retries as with any node not ready yet.
  if (s.code() == Code::kTimeout) {
    spdlog::debug("peer call {} from {} not checked: {}", method, claimed_node, s.message());
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "node " + config_.node_name + " could not check the call: " + s.message());
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "node " + config_.node_name + " refused the call: " + s.message());
}

grpc::Status PeerService::Hello(grpc::ServerContext* ctx, const peer::HelloRequest* req, peer::HelloReply* reply) {
  grpc::Status auth = Authenticate(ctx, "Hello", req->node_name());
  if (!auth.ok()) return auth;
  reply->set_protocol_version(kPeerProtocolVersion);
  reply->set_node_name(config_.node_name);
  reply->set_transport(transport_->name());
  reply->set_data_address(transport_->address());
  reply->set_auth(auth_->mode());
  if (req->protocol_version() != kPeerProtocolVersion) {
    spdlog::warn("node {} speaks peer protocol {}, this ohiod {}", req->node_name(), req->protocol_version(),
                 kPeerProtocolVersion);
  }
  return grpc::Status::OK;
}

grpc::Status PeerService::OpenGroup(grpc::ServerContext* ctx, const peer::OpenGroupRequest* req,
                                    peer::OpenGroupReply* reply) {
  grpc::Status auth = Authenticate(ctx, "OpenGroup", req->from_node());
  if (!auth.ok()) return auth;
  if (req->protocol_version() != kPeerProtocolVersion) {
    return OtherProtocol(req->protocol_version());
  }
  auto info = registry_->DescribeForPeer(*req);
  if (!info.ok()) {
    const auto code = info.status().code() == Code::kNoDaemon       ? grpc::StatusCode::UNAVAILABLE
                      : info.status().code() == Code::kGroupFailed ? grpc::StatusCode::ABORTED
                                                                    : grpc::StatusCode::FAILED_PRECONDITION;
    return grpc::Status(code, info.status().message());
  }
  reply->set_tag(info->tag);
  reply->set_srb_key(info->srb_key);
  reply->set_srb_offset(info->srb_offset);
  reply->set_ssb_bytes(info->ssb_bytes);
  reply->set_srb_bytes(info->srb_bytes);
  reply->set_min_slice_bytes(info->min_slice_bytes);
  reply->set_opened(info->opened);
  return grpc::Status::OK;
}

grpc::Status PeerService::ConnectQueuePairs(grpc::ServerContext* ctx, const peer::ConnectQueuePairsRequest* req,
                                            peer::ConnectQueuePairsReply* reply) {
  grpc::Status auth = Authenticate(ctx, "ConnectQueuePairs", req->from_node());
  if (!auth.ok()) return auth;
  if (verbs_ == nullptr) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "node " + config_.node_name + " uses the " + transport_->name() + " transport, not verbs");
  }
  if (req->protocol_version() != kPeerProtocolVersion) {
    return OtherProtocol(req->protocol_version());
  }
  DialOffer offer;
  offer.incarnation = req->incarnation();
  offer.dial_seq = req->dial_seq();
  for (const auto& e : req->endpoints()) {
    auto ep = EndpointFromProto(e);
    if (!ep.ok()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, ep.status().message());
    offer.endpoints.push_back(ep.value());
  }
  for (const auto& e : req->datagram_endpoints()) {
    auto ep = EndpointFromProto(e);
    if (!ep.ok()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, ep.status().message());
    offer.datagram_endpoints.push_back(ep.value());
  }
  offer.datagram_only = req->datagram_only();
  auto mine = verbs_->Accept(req->from_node(), offer);
  if (!mine.ok()) {
    const auto code = mine.status().code() == Code::kRefused ? grpc::StatusCode::ABORTED : grpc::StatusCode::INTERNAL;
    return grpc::Status(code, mine.status().message());
  }
  reply->set_incarnation(mine->incarnation);
  reply->set_dials_started(mine->dials_started);
  for (const QpEndpoint& e : mine->endpoints) EndpointToProto(e, reply->add_endpoints());
  reply->set_datagram(mine->datagram);
  for (const QpEndpoint& e : mine->datagram_endpoints) EndpointToProto(e, reply->add_datagram_endpoints());
  return grpc::Status::OK;
}

grpc::Status PeerService::GroupFailed(grpc::ServerContext* ctx, const peer::GroupFailedRequest* req,
                                      peer::GroupFailedReply*) {
  grpc::Status auth = Authenticate(ctx, "GroupFailed", req->from_node());
  if (!auth.ok()) return auth;
  registry_->FailedOnPeer(*req);
  return grpc::Status::OK;
}

grpc::Status PeerService::SideOpened(grpc::ServerContext* ctx, const peer::SideOpenedRequest* req,
                                     peer::SideOpenedReply*) {
  grpc::Status auth = Authenticate(ctx, "SideOpened", req->from_node());
  if (!auth.ok()) return auth;
  if (req->protocol_version() != kPeerProtocolVersion) return OtherProtocol(req->protocol_version());
  if (req->key().size() != sizeof(GroupKey)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "a group key is " + std::to_string(sizeof(GroupKey)) +
                                                                " bytes, not " + std::to_string(req->key().size()));
  }
  GroupKey key;
  std::copy(req->key().begin(), req->key().end(), key.begin());
  on_side_opened_(key, req->from_node());
  return grpc::Status::OK;
}

}  // namespace ohio
