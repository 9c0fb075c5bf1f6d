#include "tests/harness/container.h"

#include <signal.h>

#include <fstream>
#include <sstream>
#include <thread>

namespace ohio::testing {
namespace {

// Run by the container's init (pid 1 of its PID namespace, in its own mount namespace, whose
// mounts unshare made private so that none of these reaches the host): a tmpfs on /run to hold
// the mount points (nothing is created on the host's file systems), the host's socket and the
// test's directory bound there, then /tmp and /dev/shm made the container's own, as Apptainer's
// --containall and podman-hpc do. $1: the host's socket, $2: the test's directory.
constexpr const char* kSetUp = R"(set -e
mount -t tmpfs -o mode=0755 ohio-container-run /run
mkdir -p /run/ohio /run/ohio-test
: > /run/ohio/ohiod.sock
mount --bind "$1" /run/ohio/ohiod.sock
mount --bind "$2" /run/ohio-test
mount -t tmpfs -o mode=1777 ohio-container-tmp /tmp
mount -t tmpfs -o mode=1777 ohio-container-shm /dev/shm
echo container-ready
exec sleep 100000
)";

}  // namespace

Container::Container(const TempDir& dir, const std::string& name, const std::string& host_socket) {
  // --kill-child: the init dies with unshare, and every process of the namespace with the init.
  unshare_ = std::make_unique<Process>(
      std::vector<std::string>{"/usr/bin/unshare", "--pid", "--mount", "--fork", "--mount-proc", "--kill-child",
                               "/bin/sh", "-c", kSetUp, "container-init", host_socket, dir.path()},
      dir.file(name + ".container.out"));
  if (!unshare_->WaitForOutput("container-ready", std::chrono::seconds(30))) return;
  init_pid_ = ChildOf(unshare_->pid(), std::chrono::seconds(5));
}

Container::~Container() {
  unshare_->Signal(SIGKILL);
  unshare_->Wait(std::chrono::seconds(10));
  // The init got SIGKILL from the kernel as unshare died: wait until it and its namespace are
  // gone, so that nothing of the container outlives the test's daemon.
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (init_pid_ > 0 && kill(init_pid_, 0) == 0 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string Container::Log() const { return unshare_->Output(); }

std::unique_ptr<Process> Container::Run(const std::vector<std::string>& argv, const std::string& output_file,
                                        std::optional<uid_t> uid) const {
  // nsenter forks once it has entered the PID namespace, so the program is a member of it.
  std::vector<std::string> all = {"/usr/bin/nsenter", "--target", std::to_string(init_pid_), "--pid", "--mount", "--"};
  if (uid) {
    const std::string id = std::to_string(*uid);
    all.insert(all.end(), {"/usr/bin/setpriv", "--reuid=" + id, "--regid=" + id, "--clear-groups", "--"});
  }
  all.insert(all.end(), argv.begin(), argv.end());
  return std::make_unique<Process>(all, output_file);
}

pid_t ChildOf(pid_t parent, std::chrono::milliseconds deadline) {
  const std::string path = "/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) + "/children";
  const auto end = std::chrono::steady_clock::now() + deadline;
  do {
    std::ifstream in(path);
    pid_t child = -1;
    if (in >> child) return child;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (std::chrono::steady_clock::now() < end);
  return -1;
}

pid_t PidInItsNamespace(pid_t host_pid) {
  std::ifstream in("/proc/" + std::to_string(host_pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    pid_t pid = -1;
    for (pid_t p; fields >> p;) pid = p;
    return pid;
  }
  return -1;
}

}  // namespace ohio::testing
