#include "daemon/admin_service.h"

#include "common/version.h"

namespace ohio {

grpc::Status AdminService::Status(grpc::ServerContext*, const admin::StatusRequest*, admin::StatusReply* reply) {
  reply->set_version(kVersion);
  reply->set_node_name(config_.node_name);
  reply->set_uptime_seconds(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_).count()));
  reply->set_topology(topology_);
  reply->set_control_socket(config_.socket);
  reply->set_collectives_served(counters_->collectives_served.load());
  reply->set_collectives_failed(counters_->collectives_failed.load());
  reply->set_segment_bytes_in_use(registry_->bytes_in_use());
  reply->set_memory_limit_bytes(config_.memory_limit);
  reply->set_transport(transport_->name());
  reply->set_data_connections(static_cast<uint32_t>(transport_->connections()));
  for (const auto& p : transport_->connected_peers()) reply->add_connected_peers(p);
  const auto groups = registry_->Snapshot();
  reply->set_groups(static_cast<uint32_t>(groups.size()));
  for (const GroupInfo& g : groups) {
    auto* s = reply->add_group();
    s->set_key(g.key_hex);
    s->set_size(g.size);
    s->set_local_ranks(g.local_ranks);
    s->set_attached_ranks(g.attached);
    s->set_owner_uid(g.owner);
    s->set_sequence(g.rounds);
    s->set_segment_bytes(g.segment_bytes);
    s->set_state(g.failed ? "failed" : "open");
    s->set_algorithm(g.algorithm);
  }
  return grpc::Status::OK;
}

}  // namespace ohio
