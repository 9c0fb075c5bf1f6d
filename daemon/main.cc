// ohiod: the node's alltoall daemon. Reads its settings, logs what it runs on, serves the
// control socket and the admin API, drives collectives, tells systemd how it is doing, reloads
// what it can on SIGHUP and stops on SIGTERM or SIGINT.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "common/host_cpus.h"
#include "common/spin_mode.h"
#include "common/unix_socket.h"
#include "common/version.h"
#include "daemon/admin_service.h"
#include "daemon/config.h"
#include "daemon/control_server.h"
#include "daemon/counters.h"
#include "daemon/group_registry.h"
#include "daemon/host_topology.h"
#include "daemon/live_config.h"
#include "daemon/metrics_text.h"
#include "daemon/metrics_writer.h"
#include "daemon/numa_topology.h"
#include "daemon/peer_auth.h"
#include "daemon/peer_bootstrap.h"
#include "daemon/peer_service.h"
#include "daemon/progress_engine.h"
#include "daemon/rdma_devices.h"
#include "daemon/systemd_notify.h"
#include "daemon/topology.h"
#include "daemon/queue_pair_dialer.h"
#include "daemon/transport_choice.h"

namespace {

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The admin socket must be this daemon's alone: gRPC would silently replace another live
// daemon's socket file.
ohio::Status PrepareAdminSocket(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    const std::string dir = path.substr(0, slash);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return ohio::SystemError("creating " + dir, errno);
  }
  auto other = ohio::ConnectUnix(path);
  if (other.ok()) {
    close(other.value());
    return ohio::Status(ohio::Code::kInvalidArgument, "another ohiod is already serving the admin socket " + path);
  }
  return ohio::Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  ohio::ConfigOutcome loaded = ohio::LoadDaemonConfig(argc, argv);
  if (loaded.exit_now) {
    std::fputs(loaded.output.c_str(), loaded.exit_code == 0 ? stdout : stderr);
    return loaded.exit_code;
  }
  const ohio::DaemonConfig& config = loaded.config;

  // Logs go to stderr: the journal under systemd, the terminal otherwise.
  auto logger = spdlog::stderr_color_mt("ohiod");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");

  // Signals are taken synchronously by this thread; every other thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  spdlog::info("ohiod {} starting as node '{}'{}", ohio::kVersion, config.node_name,
               config.config_file.empty() ? "" : " (config " + config.config_file + ")");
  ohio::LiveConfig live(config);
  // Loaded once for all that ask hwloc about this machine, and outlives them (the rails bind
  // buffers through it as long as they live).
  const std::shared_ptr<const ohio::HostTopology> host = ohio::HostTopology::Load();
  const std::string topology = ohio::DescribeTopology(*host);
  spdlog::info("topology: {}", topology);
  ohio::RdmaInventory rdma = ohio::ListRdmaDevices(*host);
  for (const ohio::HcaInfo& h : rdma.hcas) {
    std::string numa;
    for (uint32_t n : h.numa_nodes) numa += (numa.empty() ? "" : ",") + std::to_string(n);
    spdlog::info("HCA {}: {} port(s), NUMA node {}", h.name, h.ports.size(), numa.empty() ? "unknown" : numa);
  }
  if (!rdma.note.empty()) spdlog::info("RDMA: {}", rdma.note);
  spdlog::info("per group: ssb {} B, srb {} B; memory limit {} B; timeout {} ms; algorithm {}", config.ssb_bytes,
               config.srb_bytes, config.memory_limit, config.timeout_ms, config.algorithm);

  auto auth = ohio::PeerAuth::Start(config.auth, config.munge_socket, config.node_name);
  if (!auth.ok()) {
    spdlog::critical("peer authentication: {}", auth.status().message());
    return 1;
  }
  ohio::PeerAuth* peer_auth = auth.value().get();
  if (peer_auth->enabled()) {
    spdlog::info("peers authenticate with MUNGE (munged at {})", peer_auth->socket());
  } else {
    spdlog::warn("auth = none: any host that reaches ports {} and {} is trusted as a peer", config.peer_port,
                 config.data_port);
  }

  auto chosen = ohio::ChooseTransport(config, peer_auth, host);
  if (!chosen.ok()) {
    spdlog::critical("data transport: {}", chosen.status().message());
    return 1;
  }
  ohio::Transport* transport = chosen.value().transport.get();
  spdlog::info("transport {} at {} ({})", transport->name(), transport->address(), chosen.value().why);

  auto numa = ohio::LoadNumaTopology(config.topology_xml, transport->stats().rails, host.get());
  if (!numa.ok() && !config.topology_xml.empty()) {
    spdlog::critical("topology-xml: {}", numa.status().message());
    return 1;
  }
  if (!numa.ok()) spdlog::warn("NUMA placement off: {}", numa.status().message());
  if (numa.ok()) {
    std::string nodes;
    for (const auto& n : numa.value().nodes) {
      nodes += (nodes.empty() ? "" : ", ") + std::to_string(n.os_index) + ": CPUs " + ohio::CpuListText(n.cpus);
    }
    spdlog::info("NUMA placement from {}: node(s) {}", numa.value().source, nodes.empty() ? "none" : nodes);
    for (const auto& r : numa.value().rails) {
      spdlog::info("rail {}: {}", r.name,
                   r.cpus.empty() ? "no known locality" : "local to CPUs " + ohio::CpuListText(r.cpus));
    }
  }

  ohio::DaemonCounters counters;
  const double node_cpus = ohio::CpusOfSetting(config.cpus);
  spdlog::info("cpus {} ({}): with one rank, the progress engine {}", node_cpus,
               config.cpus == "auto" ? "what the host offers" : "cpus = " + config.cpus,
               ohio::SpinModeName(ohio::ChooseSpinMode(node_cpus, 2)));
  ohio::ProgressEngine engine(std::chrono::microseconds(config.spin_us), std::chrono::microseconds(config.round_spin_us),
                             node_cpus, &counters, transport);
  ohio::Status s = engine.Start();
  if (!s.ok()) {
    spdlog::critical("progress engine: {}", s.message());
    return 1;
  }
  // Outlives the bootstrap thread, which dials through it (Connect).
  std::unique_ptr<ohio::QueuePairDialer> dialer;
  ohio::PeerBootstrap bootstrap(
      config, peer_auth, transport,
      [&engine](std::shared_ptr<ohio::Group> g, uint32_t node, ohio::PeerGroupInfo info) {
        engine.PeerInfo(std::move(g), node, info);
      },
      [&engine](std::shared_ptr<ohio::Group> g, ohio::Status why) { engine.FailGroup(std::move(g), std::move(why)); });
  engine.set_on_failed_here([&bootstrap](std::shared_ptr<ohio::Group> g) { bootstrap.TellFailed(std::move(g)); });
  // The engine outlives the bootstrap: on an early return, it must stop calling it first.
  struct Unhook {
    ohio::ProgressEngine& engine;
    ~Unhook() { engine.set_on_failed_here(nullptr); }
  } unhook{engine};
  ohio::GroupRegistry registry(config, &engine, transport,
                               [&bootstrap](std::shared_ptr<ohio::Group> g) { bootstrap.Open(std::move(g)); },
                               numa.ok() ? std::move(numa).value() : ohio::NumaTopology{});

  // The verbs transport connects queue pairs through the peer service, found like the bootstrap's.
  dialer = std::make_unique<ohio::QueuePairDialer>(
      config.node_name, peer_auth, [&bootstrap](const std::string& node) { return bootstrap.PeerAddress(node); });
  if (chosen.value().verbs != nullptr) {
    chosen.value().verbs->set_dialer(
        [d = dialer.get()](const std::string& node, const ohio::DialOffer& offer) { return d->Dial(node, offer); });
  }
  ohio::PeerService peer_service(config, peer_auth, &registry, transport, chosen.value().verbs,
                                 [&bootstrap](const ohio::GroupKey& key, const std::string& node) {
                                   bootstrap.SideOpened(key, node);
                                 });
  ohio::AdminService::Parts parts;
  parts.startup = &config;
  parts.live = &live;
  parts.registry = &registry;
  parts.transport = transport;
  parts.counters = &counters;
  parts.auth = peer_auth;
  parts.engine = &engine;
  parts.bootstrap = &bootstrap;
  parts.topology = topology;
  parts.rdma = std::move(rdma);
  parts.transport_choice = chosen.value().why;
  ohio::AdminService admin_service(std::move(parts));
  grpc::ServerBuilder peer_builder;
  // gRPC sets SO_REUSEPORT by default: a second ohiod (or anything else) on the same port would
  // then start and share the peer calls with the first, and peers would reach a daemon at
  // random. One port, one daemon: the second must fail to start.
  peer_builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  int peer_port = 0;
  peer_builder.AddListeningPort(config.listen + ":" + std::to_string(config.peer_port), grpc::InsecureServerCredentials(),
                                &peer_port);
  peer_builder.RegisterService(&peer_service);
  std::unique_ptr<grpc::Server> peer_server = peer_builder.BuildAndStart();
  if (!peer_server || peer_port == 0) {
    spdlog::critical("peer service: cannot listen on {}:{}", config.listen, config.peer_port);
    return 1;
  }
  s = PrepareAdminSocket(config.admin_socket);
  if (!s.ok()) {
    spdlog::critical("admin service: {}", s.message());
    return 1;
  }
  // The admin socket is root's: created with a umask that leaves others nothing.
  grpc::ServerBuilder admin_builder;
  admin_builder.AddListeningPort("unix:" + config.admin_socket, grpc::InsecureServerCredentials());
  admin_builder.RegisterService(&admin_service);
  const mode_t old_mask = umask(0077);
  std::unique_ptr<grpc::Server> admin_server = admin_builder.BuildAndStart();
  umask(old_mask);
  if (!admin_server) {
    spdlog::critical("admin service: cannot listen on {}", config.admin_socket);
    return 1;
  }
  spdlog::info("peer service on {}:{}, admin service on {}", config.listen, peer_port, config.admin_socket);

  ohio::ControlServer control(config, &registry);
  s = control.Start();
  if (!s.ok()) {
    spdlog::critical("control socket: {}", s.message());
    return 1;
  }

  ohio::MetricsWriter metrics([&admin_service] { return ohio::PrometheusText(admin_service.CountersSnapshot()); });
  metrics.Configure(config.metrics_file, std::chrono::seconds(config.metrics_interval_s));
  ohio::SystemdNotifier systemd([&engine](std::chrono::milliseconds deadline) { return engine.Ping(deadline); },
                                [&admin_service] { return admin_service.Summary(); });
  systemd.Ready();

  int sig = 0;
  for (;;) {
    sigwait(&signals, &sig);
    if (sig != SIGHUP) break;
    // Same sources, same precedence as at start: the file may have changed, the environment
    // and the flags have not.
    systemd.Reloading();
    ohio::ConfigOutcome next = ohio::LoadDaemonConfig(argc, argv);
    if (next.exit_now) {
      const std::string why = Trim(next.output);
      spdlog::error("SIGHUP: cannot reload: {}; the settings in force are unchanged", why);
      live.Failed(why);
    } else {
      const ohio::LiveConfig::Reload r = live.Apply(next.config);
      const ohio::DaemonConfig now = live.current();
      spdlog::set_level(spdlog::level::from_str(now.log_level));
      registry.set_timeout_ms(now.timeout_ms);
      engine.set_spin(std::chrono::microseconds(now.spin_us), std::chrono::microseconds(now.round_spin_us));
      metrics.Configure(now.metrics_file, std::chrono::seconds(now.metrics_interval_s));
      for (const auto& c : r.applied) {
        spdlog::info("SIGHUP: {} = {} (was {}){}", c.key, c.to, c.from,
                     c.key == "timeout-ms" ? "; open groups keep theirs, new groups get it" : "");
      }
      for (const auto& c : r.need_restart) {
        spdlog::warn("SIGHUP: {} = {} needs a restart of ohiod; still running with {}", c.key, c.to, c.from);
      }
      if (r.applied.empty() && r.need_restart.empty()) spdlog::info("SIGHUP: no setting changed");
    }
    systemd.Ready();
  }
  spdlog::info("signal {}: shutting down", sig);
  systemd.Stopping();
  // Watchers are told first: their streams would hold the admin server's shutdown.
  admin_service.Shutdown();
  // Groups learn why first, then their connections go.
  engine.Stop("ohiod is shutting down");
  control.Stop();
  peer_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  admin_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  spdlog::info("served {} collectives ({} failed)", counters.collectives_served.load(),
               counters.collectives_failed.load());
  return 0;
}
