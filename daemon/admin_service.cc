#include "daemon/admin_service.h"

#include <unistd.h>

#include <algorithm>
#include <map>

#include "common/unix_socket.h"
#include "common/version.h"
#include "daemon/ops/internode_policy.h"

namespace ohio {
namespace {

void FillTransportCounters(const TransportStats& s, admin::TransportCounters* out) {
  out->set_registrations(s.registrations);
  out->set_deregistrations(s.deregistrations);
  out->set_registered_bytes(s.registered_bytes);
  out->set_registrations_pending(s.registrations_pending);
  out->set_direct_puts(s.direct_puts);
  out->set_bounce_puts(s.bounce_puts);
  out->set_bounce_bytes(s.bounce_bytes);
  out->set_queue_pairs(s.queue_pairs);
  out->set_data_frames_sent(s.data_frames_sent);
  out->set_data_frames_received(s.data_frames_received);
  out->set_control_frames_sent(s.control_frames_sent);
  out->set_control_frames_received(s.control_frames_received);
  for (const auto& r : s.rails) out->add_rails(r);
  for (uint64_t b : s.rail_put_bytes) out->add_rail_put_bytes(b);
  out->set_striped_puts(s.striped_puts);
  out->set_rtr_retries(s.rtr_retries);
  out->set_rc_pool(s.rc_pool);
  out->set_datagram_peers(s.datagram_peers);
  out->set_datagram_puts(s.datagram_puts);
  out->set_datagrams_sent(s.datagrams_sent);
  out->set_datagrams_received(s.datagrams_received);
  out->set_datagram_acks_sent(s.datagram_acks_sent);
  out->set_datagram_retransmissions(s.datagram_retransmissions);
  out->set_datagram_duplicates(s.datagram_duplicates);
  out->set_datagrams_refused(s.datagrams_refused);
  out->set_datagrams_dropped(s.datagrams_dropped);
  out->set_rc_promotions(s.rc_promotions);
  out->set_rc_demotions(s.rc_demotions);
  out->set_rc_moves_refused(s.rc_moves_refused);
}

}  // namespace

namespace {

// How long the health check gives the progress engine to take a command.
constexpr std::chrono::milliseconds kEngineDeadline{1000};
constexpr std::chrono::milliseconds kMinWatchInterval{50};

void FillGroup(const GroupInfo& g, admin::GroupSummary* s) {
  s->set_key(g.key_hex);
  s->set_size(g.size);
  s->set_local_ranks(g.local_ranks);
  s->set_attached_ranks(g.attached);
  s->set_owner_uid(g.owner);
  s->set_sequence(g.rounds);
  s->set_segment_bytes(g.segment_bytes);
  s->set_state(g.failed ? "failed" : "open");
  s->set_algorithm(g.algorithm);
  s->set_internode(g.internode);
  s->set_internode_digest(g.internode_digest);
  s->set_selection(g.selection);
  s->set_selection_digest(g.selection_digest);
  for (size_t n = 0; n < g.node_names.size(); ++n) {
    auto* nr = s->add_nodes();
    nr->set_node(g.node_names[n]);
    nr->set_ranks(n < g.ranks_per_node.size() ? g.ranks_per_node[n] : 0);
  }
  s->set_ssb_bytes(g.ssb_bytes);
  s->set_srb_bytes(g.srb_bytes);
  s->set_timeout_ms(g.timeout_ms);
  s->set_bytes_per_rank_hint(g.bytes_per_rank_hint);
  admin::SegmentPlacement* p = s->mutable_placement();
  p->set_decided(g.placement.decided);
  p->set_has_node(g.placement.plan.node.has_value());
  p->set_node(g.placement.plan.node.value_or(0));
  p->set_bound(g.placement.bound);
  p->set_why(g.placement.plan.why);
  p->set_bind_error(g.placement.bind_error);
  for (const auto& r : g.placement.plan.rail_order) p->add_rail_order(r);
}

void FillSegmentCache(const SegmentCacheStats& s, admin::SegmentCacheCounters* out) {
  out->set_hits(s.hits);
  out->set_misses(s.misses);
  out->set_evictions(s.evictions);
  out->set_still_held(s.still_held);
  out->set_cached_bytes(s.cached_bytes);
  out->set_cached_segments(s.cached_segments);
  out->set_in_use_bytes(s.in_use_bytes);
  out->set_limit_bytes(s.limit_bytes);
}

}  // namespace

uint64_t AdminService::uptime_seconds() const {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_).count());
}

grpc::Status AdminService::Status(grpc::ServerContext*, const admin::StatusRequest*, admin::StatusReply* reply) {
  p_.engine->Ping(kEngineDeadline);  // folds in what ranks counted in their segments
  const DaemonConfig& startup = *p_.startup;
  reply->set_version(kVersion);
  reply->set_node_name(startup.node_name);
  reply->set_uptime_seconds(uptime_seconds());
  reply->set_pid(static_cast<uint32_t>(getpid()));
  reply->set_topology(p_.topology);
  reply->set_control_socket(startup.socket);
  reply->set_admin_socket(startup.admin_socket);
  reply->set_collectives_served(p_.counters->collectives_served.load());
  reply->set_collectives_failed(p_.counters->collectives_failed.load());
  reply->set_segment_bytes_in_use(p_.registry->bytes_in_use());
  reply->set_staging_bytes_in_use(p_.registry->staging_bytes_in_use());
  reply->set_memory_limit_bytes(startup.memory_limit);
  reply->set_transport(p_.transport->name());
  reply->set_auth(p_.auth->mode());
  reply->set_transport_choice(p_.transport_choice);
  FillTransportCounters(p_.transport->stats(), reply->mutable_transport_counters());
  FillSegmentCache(p_.registry->cache_stats(), reply->mutable_segment_cache());
  reply->set_data_address(p_.transport->address());
  reply->set_data_connections(static_cast<uint32_t>(p_.transport->connections()));
  for (const auto& peer : p_.transport->connected_peers()) reply->add_connected_peers(peer);
  for (const HcaInfo& h : p_.rdma.hcas) {
    auto* hca = reply->add_hcas();
    hca->set_name(h.name);
    hca->set_node_guid(h.node_guid);
    for (uint32_t n : h.numa_nodes) hca->add_numa_nodes(n);
    hca->set_local_cpus(h.local_cpus);
    for (const HcaPortInfo& port : h.ports) {
      auto* pp = hca->add_ports();
      pp->set_port(port.port);
      pp->set_state(port.state);
      pp->set_link_layer(port.link_layer);
      pp->set_active_mtu(port.active_mtu);
    }
  }
  std::string note = p_.rdma.note;
  if (std::string(p_.transport->name()) == "tcp") {
    note += std::string(note.empty() ? "" : "; ") + "the tcp transport does not use RDMA devices";
  } else {
    std::string rails;
    for (const auto& r : p_.transport->stats().rails) rails += (rails.empty() ? "" : ", ") + r;
    note += std::string(note.empty() ? "" : "; ") + "the verbs transport carries data on " + rails;
  }
  reply->set_hca_note(note);
  const auto groups = p_.registry->Snapshot();
  reply->set_groups(static_cast<uint32_t>(groups.size()));
  for (const GroupInfo& g : groups) FillGroup(g, reply->add_group());
  const DaemonConfig current = p_.live->current();
  const auto pending = p_.live->pending();
  for (const auto& [key, value] : ConfigEntries(current)) {
    auto* e = reply->add_config();
    e->set_key(key);
    e->set_value(value);
    e->set_reloadable(IsReloadable(key));
    auto it = pending.find(key);
    if (it != pending.end()) e->set_pending(it->second);
  }
  const SelectionPolicy selection = p_.registry->selection_policy();
  reply->set_selection_table(selection.source);
  reply->set_selection_table_digest(selection.digest);
  reply->set_selection_table_simulated_rows(static_cast<uint32_t>(std::count_if(
      selection.table.rules.begin(), selection.table.rules.end(), [](const SelectionRule& r) { return r.simulated; })));
  const InterNodePolicy internode = ChooseInterNodePolicy(current, std::nullopt);
  reply->set_internode_table(internode.source);
  reply->set_internode_table_digest(internode.digest);
  reply->set_internode_table_simulated_rows(static_cast<uint32_t>(std::count_if(
      internode.table.rules.begin(), internode.table.rules.end(), [](const InterNodeRule& r) { return r.simulated; })));
  reply->set_config_file(current.config_file);
  reply->set_last_reload(p_.live->last_reload());
  return grpc::Status::OK;
}

grpc::Status AdminService::ListPeers(grpc::ServerContext*, const admin::ListPeersRequest*,
                                     admin::ListPeersReply* reply) {
  const std::string& self = p_.startup->node_name;
  std::map<std::string, admin::PeerInfo> peers;
  auto entry = [&](const std::string& node) -> admin::PeerInfo& {
    admin::PeerInfo& p = peers[node];
    if (p.node().empty()) {
      p.set_node(node);
      p.set_peer_address(p_.bootstrap->PeerAddress(node));
      p.set_state("not connected");
    }
    return p;
  };
  for (const std::string& configured : p_.startup->peers) {
    const std::string node = configured.substr(0, configured.find('='));
    if (node != self) entry(node).set_configured(true);
  }
  const std::map<std::string, std::string> links = p_.transport->peer_links();
  for (const std::string& node : p_.transport->connected_peers()) {
    admin::PeerInfo& p = entry(node);
    p.set_state("connected");
    p.set_data_connections(p.data_connections() + 1);
    auto link = links.find(node);
    p.set_link(std::string(p_.transport->name()) + (link == links.end() ? "" : " " + link->second));
  }
  for (const GroupInfo& g : p_.registry->Snapshot()) {
    if (g.failed) continue;
    for (const std::string& node : g.node_names) {
      if (node != self) entry(node).set_groups(entry(node).groups() + 1);
    }
  }
  for (auto& [node, p] : peers) *reply->add_peers() = std::move(p);
  return grpc::Status::OK;
}

grpc::Status AdminService::ListGroups(grpc::ServerContext*, const admin::ListGroupsRequest*,
                                      admin::ListGroupsReply* reply) {
  for (const GroupInfo& g : p_.registry->Snapshot()) FillGroup(g, reply->add_groups());
  return grpc::Status::OK;
}

admin::CountersReply AdminService::CountersSnapshot() {
  // Ranks of groups on one node count their calls in the segment; the engine folds them in
  // when it answers, so a sample taken after a call includes it.
  p_.engine->Ping(kEngineDeadline);
  // And clients count the hand-backs of communicators without a group in their pages.
  if (p_.hand_back_pages != nullptr) p_.hand_back_pages->Fold();
  const DaemonCounters& c = *p_.counters;
  admin::CountersReply r;
  r.set_node_name(p_.startup->node_name);
  r.set_version(kVersion);
  r.set_transport(p_.transport->name());
  r.set_uptime_seconds(uptime_seconds());
  r.set_unix_time_ms(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  r.set_collectives_served(c.collectives_served.load());
  r.set_collectives_failed(c.collectives_failed.load());
  r.set_rounds(c.rounds.load());
  r.set_bytes_local(c.bytes_local.load());
  r.set_bytes_sent(c.bytes_sent.load());
  r.set_puts_in_flight_peak(static_cast<uint32_t>(c.puts_in_flight_peak.load()));
  r.set_bytes_received(c.bytes_received.load());
  r.set_groups_failed(c.groups_failed.load());
  r.set_groups_created(p_.registry->groups_created());
  const GroupRegistry::NumaCounts numa = p_.registry->numa_counts();
  r.set_segments_numa_bound(numa.bound);
  r.set_segments_numa_refused(numa.refused);
  r.set_engine_sleeps(c.engine_sleeps.load());
  r.set_engine_wakeups(c.engine_wakeups.load());
  r.set_ranks_woken(c.ranks_woken.load());
  for (size_t f = 0; f < kHandedBackFunctions; ++f) {
    for (size_t reason = 0; reason < kHandBackReasons; ++reason) {
      auto* h = r.add_handed_back();
      h->set_function(HandedBackFunctionName(f));
      h->set_reason(HandBackReasonName(static_cast<HandBackReason>(reason)));
      h->set_count(c.handed_back[f][reason].load());
    }
  }
  for (size_t k = 0; k < kErrorKinds; ++k) {
    auto* e = r.add_errors();
    e->set_kind(ErrorKindName(static_cast<ErrorKind>(k)));
    e->set_count(c.errors[k].load());
  }
  for (size_t s = 0; s < LatencyHistograms::kSizeClasses; ++s) {
    const LatencyHistograms::Snapshot snap = c.latency.Read(s);
    auto* l = r.add_latency();
    l->set_size_class(LatencyHistograms::SizeClassName(s));
    l->set_min_bytes(LatencyHistograms::SizeClassMinBytes(s));
    l->set_max_bytes(LatencyHistograms::SizeClassMaxBytes(s));
    uint64_t cumulative = 0;
    for (size_t b = 0; b < LatencyHistograms::kBuckets; ++b) {
      cumulative += snap.counts[b];
      auto* bucket = l->add_buckets();
      bucket->set_le_seconds(LatencyHistograms::BucketBoundSeconds(b));
      bucket->set_count(cumulative);
    }
    l->set_count(snap.count);
    l->set_sum_seconds(static_cast<double>(snap.sum_ns) / 1e9);
  }
  r.set_groups(static_cast<uint32_t>(p_.registry->Snapshot().size()));
  r.set_segment_bytes_in_use(p_.registry->bytes_in_use());
  r.set_staging_bytes_in_use(p_.registry->staging_bytes_in_use());
  r.set_memory_limit_bytes(p_.startup->memory_limit);
  r.set_data_connections(static_cast<uint32_t>(p_.transport->connections()));
  r.set_peer_channels(static_cast<uint32_t>(p_.bootstrap->channels()));
  FillTransportCounters(p_.transport->stats(), r.mutable_transport_counters());
  FillSegmentCache(p_.registry->cache_stats(), r.mutable_segment_cache());
  r.set_auth(p_.auth->mode());
  for (size_t ch = 0; ch < kAuthChannels; ++ch) {
    for (size_t reason = 0; reason < kAuthRefusals; ++reason) {
      auto* a = r.add_auth_refusals();
      a->set_channel(AuthChannelName(static_cast<AuthChannel>(ch)));
      a->set_reason(AuthRefusalName(static_cast<AuthRefusal>(reason)));
      a->set_count(p_.auth->refusals(static_cast<AuthChannel>(ch), static_cast<AuthRefusal>(reason)));
    }
  }
  const ControlSocketCounters& cs = *p_.control_socket;
  admin::ControlSocketCounters* control_socket = r.mutable_control_socket();
  control_socket->set_refused_control_max_clients(cs.refused_control_max_clients.load());
  control_socket->set_refused_control_user_max_clients(cs.refused_control_user_max_clients.load());
  control_socket->set_refused_control_oversized_frames(cs.refused_control_oversized_frames.load());
  control_socket->set_refused_control_hello_timeouts(cs.refused_control_hello_timeouts.load());
  control_socket->set_refused_control_frame_timeouts(cs.refused_control_frame_timeouts.load());
  control_socket->set_refused_control_pending_bytes(cs.refused_control_pending_bytes.load());
  control_socket->set_control_uid_deferrals(cs.control_uid_deferrals.load());
  control_socket->set_pending_bytes(cs.pending_bytes.load());
  const ConnectionRefusals::Counts data = p_.transport->stats().refusals;
  const ConnectionRefusals::Counts peer = p_.peer_gate->refusals();
  for (const auto& [port, counts] : {std::pair<const char*, const ConnectionRefusals::Counts&>{"data", data},
                                     {"peer", peer}}) {
    for (size_t reason = 0; reason < kConnectionRefusals; ++reason) {
      auto* c = r.add_connection_refusals();
      c->set_port(port);
      c->set_reason(ConnectionRefusalName(static_cast<ConnectionRefusal>(reason)));
      c->set_count(counts[reason]);
    }
  }
  r.set_unauthenticated_peer_connections(static_cast<uint32_t>(p_.peer_gate->unauthenticated()));
  return r;
}

grpc::Status AdminService::Counters(grpc::ServerContext*, const admin::CountersRequest*, admin::CountersReply* reply) {
  *reply = CountersSnapshot();
  return grpc::Status::OK;
}

grpc::Status AdminService::Watch(grpc::ServerContext* ctx, const admin::WatchRequest* req,
                                 grpc::ServerWriter<admin::CountersReply>* writer) {
  const auto interval =
      std::max(kMinWatchInterval, std::chrono::milliseconds(req->interval_ms() == 0 ? 1000 : req->interval_ms()));
  for (uint32_t sent = 0; req->count() == 0 || sent < req->count(); ++sent) {
    if (sent > 0) {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, interval, [this] { return shutting_down_; })) break;
    }
    if (ctx->IsCancelled() || !writer->Write(CountersSnapshot())) break;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "ohiod is shutting down");
  }
  return grpc::Status::OK;
}

admin::HealthReply AdminService::CheckHealth() {
  admin::HealthReply r;
  if (p_.engine->Ping(kEngineDeadline)) {
    r.add_checks("the progress engine answers");
  } else {
    r.add_problems("the progress engine did not answer within " + std::to_string(kEngineDeadline.count()) +
                   " ms: collectives on this node are stuck");
  }
  auto control = ConnectUnix(p_.startup->socket);
  if (control.ok()) {
    close(control.value());
    r.add_checks("the control socket " + p_.startup->socket + " accepts ranks");
  } else {
    r.add_problems("ranks cannot reach ohiod: " + control.status().message());
  }
  const auto groups = p_.registry->Snapshot();
  for (const GroupInfo& g : groups) {
    if (g.failed) {
      r.add_warnings("group " + g.key_hex + " (uid " + std::to_string(g.owner) + ") has failed and still has " +
                     std::to_string(g.attached) + " rank(s) attached");
    }
  }
  const uint64_t in_use = p_.registry->bytes_in_use() + p_.registry->staging_bytes_in_use();
  if (in_use * 10 > p_.startup->memory_limit * 9) {
    r.add_warnings("groups and their nonblocking calls hold " + std::to_string(in_use) + " of memory_limit = " +
                   std::to_string(p_.startup->memory_limit) + " bytes: new groups may be refused");
  }
  for (const auto& [key, value] : p_.live->pending()) {
    r.add_warnings("the config now sets " + key + " = " + value + ", which takes a restart of ohiod");
  }
  const std::string reload = p_.live->last_reload();
  if (reload.rfind("reload failed", 0) == 0) r.add_warnings(reload);
  r.set_healthy(r.problems_size() == 0);
  return r;
}

grpc::Status AdminService::Health(grpc::ServerContext*, const admin::HealthRequest*, admin::HealthReply* reply) {
  *reply = CheckHealth();
  return grpc::Status::OK;
}

std::string AdminService::Summary() {
  return std::to_string(p_.registry->Snapshot().size()) + " groups, " +
         std::to_string(p_.counters->collectives_served.load()) + " collectives served, " +
         std::to_string(p_.transport->connections()) + " data connections";
}

void AdminService::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutting_down_ = true;
  }
  cv_.notify_all();
}

}  // namespace ohio
