// The listening socket of a port ohiod accepts on itself (the data port, the peer port), and
// where an accepted connection came from: one way for both, so that they bind, refuse a second
// daemon and name their clients alike.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace ohio {

// A non-blocking listening socket on host:port (IPv4; port 0 picks one), SO_REUSEADDR and never
// SO_REUSEPORT, so that a second process cannot bind the port beside it. `what` names the port
// in errors ("binding the data port 10.1.0.1:7471: Address already in use").
Result<int> ListenTcp(const std::string& host, uint16_t port, const std::string& what);
// The port a listening socket is bound to.
uint16_t BoundPort(int listen_fd);

// An accepted connection's remote end: "ADDRESS:PORT" for the logs, and the IPv4 address
// (network order) the caps count by.
struct Remote {
  std::string where;
  std::string host;
  uint32_t address = 0;
};
Remote RemoteOf(int fd);

}  // namespace ohio
