// ohiod as one object: the composition root. It builds the daemon's parts in the order they
// need each other (peer authentication, the data transport, the progress engine, the peer
// bootstrap, the group registry, the peer and admin services, the control socket, metrics and
// systemd), hands each the parts it uses, and tears them down in the reverse order. main()
// (daemon/main.cc) only reads the settings, sets up logging and signals, and drives this.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "common/status.h"
#include "daemon/admin_service.h"
#include "daemon/control/control_server.h"
#include "daemon/control/group_registry.h"
#include "daemon/engine/counters.h"
#include "daemon/engine/progress_engine.h"
#include "daemon/host/host_topology.h"
#include "daemon/host/numa_topology.h"
#include "daemon/host/rdma_devices.h"
#include "daemon/ops/config.h"
#include "daemon/ops/live_config.h"
#include "daemon/ops/metrics_writer.h"
#include "daemon/ops/systemd_notify.h"
#include "daemon/peers/peer_auth.h"
#include "daemon/peers/peer_bootstrap.h"
#include "daemon/peers/peer_port_gate.h"
#include "daemon/peers/peer_service.h"
#include "daemon/peers/queue_pair_dialer.h"
#include "daemon/peers/transport_choice.h"

namespace ohio {

class Daemon {
 public:
  explicit Daemon(DaemonConfig config);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Builds and starts every part, logging what it runs on; the first part that cannot start
  // says why (the daemon is then torn down by its destructor). Tells systemd it is ready.
  Status Start();

  // A SIGHUP: the settings read again (`next`, or why they could not be) applied where they
  // can be while running; the rest is logged as needing a restart.
  void Reload(const ConfigOutcome& next);

  // A SIGTERM or SIGINT: watchers, groups, then connections, each told why.
  void Stop(int signal);

 private:
  // Like an on-stack object declared after the engine and the bootstrap: the engine stops
  // calling the bootstrap before the bootstrap goes.
  struct Unhook {
    ProgressEngine* engine = nullptr;
    ~Unhook();
  };

  Status StartServers();

  const DaemonConfig config_;
  LiveConfig live_;
  // Loaded once for all that ask hwloc about this machine, and outlives them (the rails bind
  // buffers through it as long as they live).
  std::shared_ptr<const HostTopology> host_;
  std::string topology_;
  std::unique_ptr<PeerAuth> auth_;
  ChosenTransport chosen_;
  DaemonCounters counters_;
  ControlSocketCounters control_socket_counters_;
  HandBackPages hand_back_pages_{&counters_.handed_back};
  // The nonblocking calls' staging, counted beside the groups' segments; outlives the engine.
  StagingLedger staging_{config_.memory_limit, config_.memory_limit * config_.user_memory_percent / 100};
  std::unique_ptr<ProgressEngine> engine_;
  // Outlives the bootstrap thread, which dials through it (Connect).
  std::unique_ptr<QueuePairDialer> dialer_;
  std::unique_ptr<PeerBootstrap> bootstrap_;
  Unhook unhook_;
  std::unique_ptr<GroupRegistry> registry_;
  // Outlives the peer server, whose threads tell it of authenticated connections; its own thread
  // is stopped first (Stop, ~Daemon).
  std::unique_ptr<PeerPortGate> peer_gate_;
  std::unique_ptr<PeerService> peer_service_;
  std::unique_ptr<AdminService> admin_service_;
  std::unique_ptr<grpc::Server> peer_server_;
  std::unique_ptr<grpc::Server> admin_server_;
  std::unique_ptr<ControlServer> control_;
  std::unique_ptr<MetricsWriter> metrics_;
  std::unique_ptr<SystemdNotifier> systemd_;
};

}  // namespace ohio
