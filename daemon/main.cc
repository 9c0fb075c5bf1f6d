// ohiod: the node's alltoall daemon. Reads its settings, sets up logging and signals, and runs
// the daemon (daemon/daemon.h): it serves the control socket and the admin API, drives
// collectives, tells systemd how it is doing, reloads what it can on SIGHUP and stops on SIGTERM
// or SIGINT.
#include <signal.h>

#include <cstdio>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "daemon/daemon.h"
#include "daemon/ops/config.h"

int main(int argc, char** argv) {
  ohio::ConfigOutcome loaded = ohio::LoadDaemonConfig(argc, argv);
  if (loaded.exit_now) {
    std::fputs(loaded.output.c_str(), loaded.exit_code == 0 ? stdout : stderr);
    return loaded.exit_code;
  }

  // Logs go to stderr: the journal under systemd, the terminal otherwise.
  auto logger = spdlog::stderr_color_mt("ohiod");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(loaded.config.log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");

  // Signals are taken synchronously by this thread; every other thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  ohio::Daemon daemon(std::move(loaded.config));
  const ohio::Status started = daemon.Start();
  if (!started.ok()) {
    spdlog::critical("{}", started.message());
    return 1;
  }
  int sig = 0;
  for (;;) {
    sigwait(&signals, &sig);
    if (sig != SIGHUP) break;
    // Same sources, same precedence as at start: the file may have changed, the environment
    // and the flags have not.
    daemon.Reload(ohio::LoadDaemonConfig(argc, argv));
  }
  daemon.Stop(sig);
  return 0;
}
