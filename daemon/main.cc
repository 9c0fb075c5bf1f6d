// ohiod: the node's alltoall daemon. Reads its settings, logs what it runs on, serves the
// control socket and drives collectives until SIGTERM or SIGINT.
#include <signal.h>
#include <sys/stat.h>

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "common/version.h"
#include "daemon/admin_service.h"
#include "daemon/config.h"
#include "daemon/control_server.h"
#include "daemon/counters.h"
#include "daemon/group_registry.h"
#include "daemon/peer_bootstrap.h"
#include "daemon/peer_service.h"
#include "daemon/progress_engine.h"
#include "daemon/topology.h"
#include "daemon/transport/tcp_transport.h"

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
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  spdlog::info("ohiod {} starting as node '{}'{}", ohio::kVersion, config.node_name,
               config.config_file.empty() ? "" : " (config " + config.config_file + ")");
  const std::string topology = ohio::DescribeTopology();
  spdlog::info("topology: {}", topology);
  spdlog::info("per group: ssb {} B, srb {} B; memory limit {} B; timeout {} ms; algorithm {}", config.ssb_bytes,
               config.srb_bytes, config.memory_limit, config.timeout_ms, config.algorithm);

  auto transport = ohio::TcpTransport::Start(config.node_name, config.listen, config.data_port, config.advertise);
  if (!transport.ok()) {
    spdlog::critical("data transport: {}", transport.status().message());
    return 1;
  }
  spdlog::info("transport {} at {}", transport.value()->name(), transport.value()->address());

  ohio::DaemonCounters counters;
  ohio::ProgressEngine engine(std::chrono::microseconds(config.spin_us), &counters, transport.value().get());
  ohio::Status s = engine.Start();
  if (!s.ok()) {
    spdlog::critical("progress engine: {}", s.message());
    return 1;
  }
  ohio::PeerBootstrap bootstrap(
      config, transport.value().get(),
      [&engine](std::shared_ptr<ohio::Group> g, uint32_t node, ohio::PeerGroupInfo info) {
        engine.PeerInfo(std::move(g), node, info);
      },
      [&engine](std::shared_ptr<ohio::Group> g, ohio::Status why) { engine.FailGroup(std::move(g), std::move(why)); });
  ohio::GroupRegistry registry(config, &engine, transport.value().get(),
                               [&bootstrap](std::shared_ptr<ohio::Group> g) { bootstrap.Open(std::move(g)); });

  ohio::PeerService peer_service(config, &registry, transport.value().get());
  ohio::AdminService admin_service(config, &registry, transport.value().get(), &counters, topology);
  grpc::ServerBuilder peer_builder;
  int peer_port = 0;
  peer_builder.AddListeningPort(config.listen + ":" + std::to_string(config.peer_port), grpc::InsecureServerCredentials(),
                                &peer_port);
  peer_builder.RegisterService(&peer_service);
  std::unique_ptr<grpc::Server> peer_server = peer_builder.BuildAndStart();
  if (!peer_server || peer_port == 0) {
    spdlog::critical("peer service: cannot listen on {}:{}", config.listen, config.peer_port);
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

  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("signal {}: shutting down", sig);
  // Groups learn why first, then their connections go.
  engine.Stop("ohiod is shutting down");
  control.Stop();
  peer_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  admin_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  spdlog::info("served {} collectives ({} failed)", counters.collectives_served.load(),
               counters.collectives_failed.load());
  return 0;
}
