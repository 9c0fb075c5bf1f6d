#include "tests/harness/munged.h"

#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "common/unix_socket.h"

namespace ohio::testing {

Munged::Munged(const TempDir& dir, const std::string& name)
    : dir_(dir.path()), name_(name), socket_(dir.file(name + ".munge.sock")) {}

Munged::~Munged() {
  if (process_ && process_->Running()) {
    process_->Signal(SIGTERM);
    process_->Wait(std::chrono::seconds(10));
  }
}

bool Munged::Start() {
  const std::string base = dir_ + "/" + name_;
  Process key({"/usr/sbin/mungekey", "--create", "--keyfile=" + base + ".munge.key"}, base + ".mungekey.out");
  if (key.Wait(std::chrono::seconds(20)) != 0) return false;
  process_ = std::make_unique<Process>(
      std::vector<std::string>{"/usr/sbin/munged", "--foreground", "--force", "--socket=" + socket_,
                               "--key-file=" + base + ".munge.key", "--pid-file=" + base + ".munge.pid",
                               "--log-file=" + base + ".munge.log", "--seed-file=" + base + ".munge.seed"},
      base + ".munged.out");
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < end) {
    if (!process_->Running()) return false;
    auto fd = ConnectUnix(socket_);
    if (fd.ok()) {
      close(fd.value());
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::string Munged::Log() const {
  std::ifstream in(dir_ + "/" + name_ + ".munge.log");
  std::stringstream s;
  s << in.rdbuf();
  return s.str() + (process_ ? process_->Output() : "");
}

}  // namespace ohio::testing
