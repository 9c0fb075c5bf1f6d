#include "common/unix_socket.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ohio {

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

}  // namespace ohio
