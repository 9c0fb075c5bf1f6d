#include "daemon/peer_service.h"

#include <spdlog/spdlog.h>

#include "common/version.h"

namespace ohio {

grpc::Status PeerService::Hello(grpc::ServerContext*, const peer::HelloRequest* req, peer::HelloReply* reply) {
  reply->set_protocol_version(kPeerProtocolVersion);
  reply->set_node_name(config_.node_name);
  reply->set_transport(transport_->name());
  reply->set_data_address(transport_->address());
  if (req->protocol_version() != kPeerProtocolVersion) {
    spdlog::warn("node {} speaks peer protocol {}, this ohiod {}", req->node_name(), req->protocol_version(),
                 kPeerProtocolVersion);
  }
  return grpc::Status::OK;
}

grpc::Status PeerService::OpenGroup(grpc::ServerContext*, const peer::OpenGroupRequest* req,
                                    peer::OpenGroupReply* reply) {
  if (req->protocol_version() != kPeerProtocolVersion) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "node " + config_.node_name + " speaks peer protocol " + std::to_string(kPeerProtocolVersion) +
                            ", not " + std::to_string(req->protocol_version()));
  }
  auto info = registry_->DescribeForPeer(*req);
  if (!info.ok()) {
    const auto code = info.status().code() == Code::kNoDaemon ? grpc::StatusCode::UNAVAILABLE
                                                               : grpc::StatusCode::FAILED_PRECONDITION;
    return grpc::Status(code, info.status().message());
  }
  reply->set_tag(info->tag);
  reply->set_srb_key(info->srb_key);
  reply->set_srb_offset(info->srb_offset);
  reply->set_ssb_bytes(info->ssb_bytes);
  reply->set_srb_bytes(info->srb_bytes);
  return grpc::Status::OK;
}

}  // namespace ohio
