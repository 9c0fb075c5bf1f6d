#include "tests/harness/daemon_fixture.h"

#include "common/unix_socket.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>

namespace ohio::testing {
namespace {

bool Accepts(const std::string& path) {
  auto fd = ConnectUnix(path);
  if (!fd.ok()) return false;
  close(fd.value());
  return true;
}

}  // namespace

Daemon::Daemon(const TempDir& dir, std::vector<std::string> flags, const std::string& name)
    : socket_(dir.file(name + ".sock")),
      admin_socket_(dir.file(name + ".admin.sock")),
      log_(dir.file(name + ".log")),
      flags_(std::move(flags)) {}

Daemon::~Daemon() {
  if (running()) Stop();
}

bool Daemon::Launch() {
  const std::string binary = binary_.empty() ? RunfilePath("daemon/ohiod") : binary_;
  std::vector<std::string> argv = {binary, "--socket", socket_, "--admin-socket", admin_socket_,
                                   "--log-level", "debug", "--peer-port", "0", "--data-port", "0",
                                   "--listen", "127.0.0.1", "--advertise", "127.0.0.1",
                                   // Explicitly, as an admin would: most tests have no munged. Tests of peer
                                   // authentication pass --auth munge (a later flag wins).
                                   "--auth", "none"};
  argv.insert(argv.end(), flags_.begin(), flags_.end());
  process_ = std::make_unique<Process>(argv, log_);
  return true;
}

bool Daemon::AwaitUp() {
  if (!process_) return false;
  // A minute: daemons started side by side share the CPUs, and in the emulated Soft-RoCE guest
  // (tests/vm) two of them took over 20 s to open their HCAs and listen. Only a daemon that
  // never comes up waits it out; one that exits ends the wait at once.
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < end) {
    if (!process_->Running()) {
      std::fprintf(stderr, "ohiod for %s exited before it listened\n", socket_.c_str());
      return false;
    }
    if (Accepts(socket_)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr, "ohiod for %s did not listen within 60 s\n", socket_.c_str());
  return false;
}

int Daemon::Stop() {
  if (!process_) return -1;
  process_->Signal(SIGTERM);
  return process_->Wait(std::chrono::seconds(20));
}

void Daemon::Kill() {
  if (!process_) return;
  process_->Signal(SIGKILL);
  process_->Wait(std::chrono::seconds(20));
}

std::string KeyHex(const std::string& seed) {
  static const char kHex[] = "0123456789abcdef";
  size_t h = std::hash<std::string>()(seed);
  std::string out;
  for (int i = 0; i < 32; ++i) {
    out += kHex[(h >> ((i % 16) * 4)) & 15];
    if (i == 15) h = std::hash<std::string>()(seed + "/second half");
  }
  return out;
}

}  // namespace ohio::testing
