#include "common/unix_socket.h"

#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ohio {
namespace {

// Linux 6.5's socket option; Debian 12's headers predate it.
constexpr int kSoPeerPidfd = 77;

}  // namespace

Result<struct sockaddr_un> UnixAddress(const std::string& path) {
  struct sockaddr_un addr = {};
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return Status(Code::kInvalidArgument, "socket path '" + path + "' must be 1 to " +
                                              std::to_string(sizeof(addr.sun_path) - 1) + " bytes long");
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

Result<int> ConnectUnix(const std::string& path) {
  auto addr = UnixAddress(path);
  if (!addr.ok()) return addr.status();
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return SystemError("socket", errno);
  if (connect(fd, reinterpret_cast<const struct sockaddr*>(&addr.value()), sizeof(struct sockaddr_un)) != 0) {
    const int err = errno;
    close(fd);
    return Status(Code::kNoDaemon, "cannot reach ohiod at " + path + ": " + std::strerror(err));
  }
  return fd;
}

int OpenPidfd(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

int PeerPidfd(int fd, pid_t pid) {
  int pidfd = -1;
  socklen_t len = sizeof(pidfd);
  if (getsockopt(fd, SOL_SOCKET, kSoPeerPidfd, &pidfd, &len) == 0 && pidfd >= 0) return pidfd;
  return OpenPidfd(pid);
}

}  // namespace ohio
