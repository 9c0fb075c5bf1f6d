#include "daemon/daemon.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>

#include <spdlog/spdlog.h>

#include "admin/metrics_text.h"
#include "common/host_cpus.h"
#include "common/spin_mode.h"
#include "common/unix_socket.h"
#include "common/version.h"
#include "daemon/host/topology.h"
#include "daemon/ops/selection_policy.h"

namespace ohio {

namespace {

// Calls at once on one connection to the peer port: a peer makes one per group being set up and
// per queue pair dial; more would only let one connection take the service's threads.
constexpr int kPeerCallsPerConnection = 32;

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The admin socket must be this daemon's alone: gRPC would silently replace another live
// daemon's socket file.
Status PrepareAdminSocket(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    const std::string dir = path.substr(0, slash);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return SystemError("creating " + dir, errno);
  }
  auto other = ConnectUnix(path);
  if (other.ok()) {
    return Status(Code::kInvalidArgument, "another ohiod is already serving the admin socket " + path);
  }
  return Status::Ok();
}

// Where NUMA placement comes from, and what it found, for the log.
void LogNuma(const Result<NumaTopology>& numa) {
  if (!numa.ok()) {
    spdlog::warn("NUMA placement off: {}", numa.status().message());
    return;
  }
  std::string nodes;
  for (const auto& n : numa.value().nodes) {
    nodes += (nodes.empty() ? "" : ", ") + std::to_string(n.os_index) + ": CPUs " + CpuListText(n.cpus);
  }
  spdlog::info("NUMA placement from {}: node(s) {}", numa.value().source, nodes.empty() ? "none" : nodes);
  for (const auto& r : numa.value().rails) {
    spdlog::info("rail {}: {}", r.name, r.cpus.empty() ? "no known locality" : "local to CPUs " + CpuListText(r.cpus));
  }
}

}  // namespace

Daemon::Unhook::~Unhook() {
  if (engine != nullptr) engine->set_on_failed_here(nullptr);
}

Daemon::Daemon(DaemonConfig config) : config_(std::move(config)), live_(config_) {}

Daemon::~Daemon() {
  // Its thread hands connections to the peer server, which goes before it.
  if (peer_gate_) peer_gate_->Stop();
}

Status Daemon::Start() {
  spdlog::info("ohiod {} starting as node '{}'{}", kVersion, config_.node_name,
               config_.config_file.empty() ? "" : " (config " + config_.config_file + ")");
  host_ = HostTopology::Load();
  topology_ = DescribeTopology(*host_);
  spdlog::info("topology: {}", topology_);
  RdmaInventory rdma = ListRdmaDevices(*host_);
  for (const HcaInfo& h : rdma.hcas) {
    std::string numa;
    for (uint32_t n : h.numa_nodes) numa += (numa.empty() ? "" : ",") + std::to_string(n);
    spdlog::info("HCA {}: {} port(s), NUMA node {}", h.name, h.ports.size(), numa.empty() ? "unknown" : numa);
  }
  if (!rdma.note.empty()) spdlog::info("RDMA: {}", rdma.note);
  spdlog::info("per group: ssb {} B, srb {} B; memory limit {} B; timeout {} ms; design {}", config_.ssb_bytes,
               config_.srb_bytes, config_.memory_limit, config_.timeout_ms, config_.design);

  auto auth = PeerAuth::Start(config_.auth, config_.munge_socket, config_.node_name);
  if (!auth.ok()) return Status(auth.status().code(), "peer authentication: " + auth.status().message());
  auth_ = std::move(auth).value();
  if (auth_->enabled()) {
    spdlog::info("peers authenticate with MUNGE (munged at {})", auth_->socket());
  } else {
    spdlog::warn("auth = none: any host that reaches ports {} and {} is trusted as a peer", config_.peer_port,
                 config_.data_port);
  }

  // Before the transport: the gate keeps the summaries of refused credentials' lines, which
  // the data port's refusals add to.
  PeerPortGate::Limits gate_limits;
  gate_limits.auth_timeout = std::chrono::milliseconds(config_.hello_timeout_ms);
  gate_limits.max_unauthenticated = config_.max_unauthenticated_peer_connections;
  auto gate = PeerPortGate::Listen(config_.listen, config_.peer_port, gate_limits, auth_.get());
  if (!gate.ok()) {
    return Status(gate.status().code(), "peer service: cannot listen on " + config_.listen + ":" +
                                            std::to_string(config_.peer_port) + ": " + gate.status().message());
  }
  peer_gate_ = std::move(gate).value();
  auto chosen = ChooseTransport(config_, auth_.get(), host_);
  if (!chosen.ok()) return Status(chosen.status().code(), "data transport: " + chosen.status().message());
  chosen_ = std::move(chosen).value();
  Transport* transport = chosen_.transport.get();
  spdlog::info("transport {} at {} ({})", transport->name(), transport->address(), chosen_.why);

  auto numa = LoadNumaTopology(config_.topology_xml, transport->stats().rails, host_.get());
  if (!numa.ok() && !config_.topology_xml.empty()) {
    return Status(numa.status().code(), "topology-xml: " + numa.status().message());
  }
  LogNuma(numa);

  const double node_cpus = CpusOfSetting(config_.cpus);
  spdlog::info("cpus {} ({}): with one rank, the progress engine {}", node_cpus,
               config_.cpus == "auto" ? "what the host offers" : "cpus = " + config_.cpus,
               SpinModeName(ChooseSpinMode(node_cpus, 2)));
  engine_ = std::make_unique<ProgressEngine>(std::chrono::microseconds(config_.spin_us),
                                             std::chrono::microseconds(config_.round_spin_us), node_cpus, &counters_,
                                             transport, &staging_);
  Status s = engine_->Start();
  if (!s.ok()) return Status(s.code(), "progress engine: " + s.message());
  ProgressEngine* engine = engine_.get();
  bootstrap_ = std::make_unique<PeerBootstrap>(
      config_, auth_.get(), transport,
      [engine](std::shared_ptr<Group> g, uint32_t node, PeerGroupInfo info) {
        engine->PeerInfo(std::move(g), node, info);
      },
      [engine](std::shared_ptr<Group> g, Status why) { engine->FailGroup(std::move(g), std::move(why)); });
  PeerBootstrap* bootstrap = bootstrap_.get();
  engine_->set_on_failed_here([bootstrap](std::shared_ptr<Group> g) { bootstrap->TellFailed(std::move(g)); });
  unhook_.engine = engine;
  registry_ = std::make_unique<GroupRegistry>(config_, engine, transport, &staging_,
                                              [bootstrap](std::shared_ptr<Group> g) { bootstrap->Open(std::move(g)); },
                                              numa.ok() ? std::move(numa).value() : NumaTopology{});

  // The verbs transport connects queue pairs through the peer service, found like the bootstrap's.
  dialer_ = std::make_unique<QueuePairDialer>(
      config_.node_name, auth_.get(), [bootstrap](const std::string& node) { return bootstrap->PeerAddress(node); });
  if (chosen_.verbs != nullptr) {
    chosen_.verbs->set_rtr_retry_budget(std::chrono::milliseconds(config_.rtr_retry_budget_ms));
    chosen_.verbs->set_dialer(
        [d = dialer_.get()](const std::string& node, const DialOffer& offer) { return d->Dial(node, offer); });
  }
  peer_service_ = std::make_unique<PeerService>(
      config_, auth_.get(), peer_gate_.get(), registry_.get(), transport, chosen_.verbs,
      [bootstrap](const GroupKey& key, const std::string& node) { bootstrap->SideOpened(key, node); });
  AdminService::Parts parts;
  parts.startup = &config_;
  parts.live = &live_;
  parts.registry = registry_.get();
  parts.transport = transport;
  parts.counters = &counters_;
  parts.control_socket = &control_socket_counters_;
  parts.hand_back_pages = &hand_back_pages_;
  parts.auth = auth_.get();
  parts.peer_gate = peer_gate_.get();
  parts.engine = engine;
  parts.bootstrap = bootstrap;
  parts.topology = topology_;
  parts.rdma = std::move(rdma);
  parts.transport_choice = chosen_.why;
  admin_service_ = std::make_unique<AdminService>(std::move(parts));

  s = StartServers();
  if (!s.ok()) return s;

  AdminService* admin = admin_service_.get();
  metrics_ = std::make_unique<MetricsWriter>([admin] { return PrometheusText(admin->CountersSnapshot()); });
  metrics_->Configure(config_.metrics_file, std::chrono::seconds(config_.metrics_interval_s));
  systemd_ = std::make_unique<SystemdNotifier>(
      [engine](std::chrono::milliseconds deadline) { return engine->Ping(deadline); },
      [admin] { return admin->Summary(); });
  systemd_->Ready();
  return Status::Ok();
}

Status Daemon::StartServers() {
  // No listening port of gRPC's own: the gate (peer_port_gate.h) accepts, caps the connections
  // not yet authenticated, and hands the rest to this server. What gRPC does bound is set here:
  // a connection with no call under way is closed after peer-connection-idle-ms, a connection
  // carries a few calls at once, and calls run on at most peer-service-threads threads. No
  // maximum connection age: peers keep their channels while they use them, and the gate's
  // deadline already ends connections that never authenticate.
  grpc::ServerBuilder peer_builder;
  peer_builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, static_cast<int>(config_.peer_connection_idle_ms));
  peer_builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kPeerCallsPerConnection);
  grpc::ResourceQuota peer_quota("ohiod-peer-service");
  peer_quota.SetMaxThreads(static_cast<int>(config_.peer_service_threads));
  peer_builder.SetResourceQuota(peer_quota);
  peer_builder.RegisterService(peer_service_.get());
  peer_server_ = peer_builder.BuildAndStart();
  if (!peer_server_) {
    return Status(Code::kInvalidArgument, "peer service: cannot start the gRPC server");
  }
  peer_gate_->Serve(peer_server_.get());
  const uint16_t peer_port = peer_gate_->port();
  Status s = PrepareAdminSocket(config_.admin_socket);
  if (!s.ok()) return Status(s.code(), "admin service: " + s.message());
  // The admin socket is root's: created with a umask that leaves others nothing.
  grpc::ServerBuilder admin_builder;
  admin_builder.AddListeningPort("unix:" + config_.admin_socket, grpc::InsecureServerCredentials());
  admin_builder.RegisterService(admin_service_.get());
  const mode_t old_mask = umask(0077);
  admin_server_ = admin_builder.BuildAndStart();
  umask(old_mask);
  if (!admin_server_) return Status(Code::kInvalidArgument, "admin service: cannot listen on " + config_.admin_socket);
  spdlog::info("peer service on {}:{}, admin service on {}", config_.listen, peer_port, config_.admin_socket);

  control_ = std::make_unique<ControlServer>(config_, registry_.get(), &control_socket_counters_, &hand_back_pages_);
  s = control_->Start();
  if (!s.ok()) return Status(s.code(), "control socket: " + s.message());
  return Status::Ok();
}

void Daemon::Reload(const ConfigOutcome& next) {
  systemd_->Reloading();
  if (next.exit_now) {
    const std::string why = Trim(next.output);
    spdlog::error("SIGHUP: cannot reload: {}; the settings in force are unchanged", why);
    live_.Failed(why);
  } else {
    const LiveConfig::Reload r = live_.Apply(next.config);
    const DaemonConfig now = live_.current();
    spdlog::set_level(spdlog::level::from_str(now.log_level));
    registry_->set_timeout_ms(now.timeout_ms);
    registry_->set_selection_policy(ChooseSelectionPolicy(now));
    engine_->set_spin(std::chrono::microseconds(now.spin_us), std::chrono::microseconds(now.round_spin_us));
    metrics_->Configure(now.metrics_file, std::chrono::seconds(now.metrics_interval_s));
    for (const auto& c : r.applied) {
      const bool new_groups_only = c.key == "timeout-ms" || c.key == "selection-table";
      spdlog::info("SIGHUP: {} = {} (was {}){}", c.key, c.to, c.from,
                   new_groups_only ? "; open groups keep theirs, new groups get it" : "");
    }
    for (const auto& c : r.need_restart) {
      spdlog::warn("SIGHUP: {} = {} needs a restart of ohiod; still running with {}", c.key, c.to, c.from);
    }
    if (r.applied.empty() && r.need_restart.empty()) spdlog::info("SIGHUP: no setting changed");
  }
  systemd_->Ready();
}

void Daemon::Stop(int signal) {
  spdlog::info("signal {}: shutting down", signal);
  systemd_->Stopping();
  // Watchers are told first: their streams would hold the admin server's shutdown.
  admin_service_->Shutdown();
  // Groups learn why first, then their connections go.
  engine_->Stop("ohiod is shutting down");
  control_->Stop();
  peer_gate_->Stop();
  peer_server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  admin_server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  spdlog::info("served {} collectives ({} failed)", counters_.collectives_served.load(),
               counters_.collectives_failed.load());
}

}  // namespace ohio
