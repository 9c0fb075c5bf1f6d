#include "common/tcp_listen.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace ohio {

Result<int> ListenTcp(const std::string& host, uint16_t port, const std::string& what) {
  struct sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return Status(Code::kInvalidArgument, what + " listen address '" + host + "' is not an IPv4 address");
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return SystemError("socket", errno);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    close(fd);
    return SystemError("binding the " + what + " " + host + ":" + std::to_string(port), err);
  }
  if (listen(fd, 128) != 0) {
    const int err = errno;
    close(fd);
    return SystemError("listen", err);
  }
  return fd;
}

uint16_t BoundPort(int listen_fd) {
  struct sockaddr_in addr = {};
  socklen_t len = sizeof(addr);
  getsockname(listen_fd, reinterpret_cast<struct sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

Remote RemoteOf(int fd) {
  struct sockaddr_in from = {};
  socklen_t len = sizeof(from);
  char host[INET_ADDRSTRLEN] = "?";
  if (getpeername(fd, reinterpret_cast<struct sockaddr*>(&from), &len) == 0) {
    inet_ntop(AF_INET, &from.sin_addr, host, sizeof(host));
  }
  Remote r;
  r.host = host;
  r.where = r.host + ":" + std::to_string(ntohs(from.sin_port));
  r.address = from.sin_addr.s_addr;
  return r;
}

}  // namespace ohio
