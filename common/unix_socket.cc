#include "common/unix_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

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

Result<int> ConnectUnixWithin(const std::string& path, std::chrono::milliseconds within) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + within;
  auto addr = UnixAddress(path);
  if (!addr.ok()) return addr.status();
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return SystemError("socket", errno);
  const auto late = [&] {
    close(fd);
    return Status(Code::kTimeout, "ohiod did not accept the connection within " + std::to_string(within.count()) +
                                      " ms: the listen backlog of " + path +
                                      " stayed full (ohiod stopped, hung, or flooded with connections)");
  };
  // A Unix listener whose backlog is full refuses a non-blocking connect with EAGAIN at once,
  // and nothing can be polled for room in it: try again, a little less often each time.
  std::chrono::milliseconds pause{1};
  for (;;) {
    if (connect(fd, reinterpret_cast<const struct sockaddr*>(&addr.value()), sizeof(struct sockaddr_un)) == 0) break;
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      const auto now = Clock::now();
      if (now >= deadline) return late();
      std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - now));
      pause = std::min(pause * 2, std::chrono::milliseconds(50));
      continue;
    }
    if (err == EINPROGRESS) {
      // Not what a Unix socket does today, but what connect's contract allows.
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      struct pollfd p = {fd, POLLOUT, 0};
      if (poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0))) != 1) return late();
      int so_error = 0;
      socklen_t len = sizeof(so_error);
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
      if (so_error == 0) break;
      close(fd);
      return Status(Code::kNoDaemon, "cannot reach ohiod at " + path + ": " + std::strerror(so_error));
    }
    if (err == EINTR) continue;
    close(fd);
    return Status(Code::kNoDaemon, "cannot reach ohiod at " + path + ": " + std::strerror(err));
  }
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    close(fd);
    return SystemError("fcntl", err);
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
