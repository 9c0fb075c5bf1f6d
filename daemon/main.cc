// ohiod: the node's alltoall daemon. Reads its settings, logs what it runs on, serves the
// control socket and drives collectives until SIGTERM or SIGINT.
#include <signal.h>

#include <chrono>
#include <cstdio>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "common/version.h"
#include "daemon/config.h"
#include "daemon/control_server.h"
#include "daemon/counters.h"
#include "daemon/group_registry.h"
#include "daemon/progress_engine.h"
#include "daemon/topology.h"

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
  spdlog::info("topology: {}", ohio::DescribeTopology());
  spdlog::info("per group: ssb {} B, srb {} B; memory limit {} B; timeout {} ms; algorithm {}", config.ssb_bytes,
               config.srb_bytes, config.memory_limit, config.timeout_ms, config.algorithm);

  ohio::DaemonCounters counters;
  ohio::ProgressEngine engine(std::chrono::microseconds(config.spin_us), &counters);
  ohio::Status s = engine.Start();
  if (!s.ok()) {
    spdlog::critical("progress engine: {}", s.message());
    return 1;
  }
  ohio::GroupRegistry registry(config, &engine);
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
  spdlog::info("served {} collectives ({} failed)", counters.collectives_served.load(),
               counters.collectives_failed.load());
  return 0;
}
