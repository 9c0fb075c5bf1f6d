// Raw TCP connections to a daemon's ports, as any host on the network could open them: from a
// chosen loopback address (127.0.0.0/8 is all this host's), and watched for the daemon's close.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace ohio::testing {

// A connection from `source` (e.g. "127.0.0.2") to 127.0.0.1:port; -1 (errno set) if it failed.
int ConnectFrom(const std::string& source, int port);

// True once the peer has closed `fd` (end of file or reset) within `deadline`; whatever it
// sent before is read and dropped.
bool ClosedByPeer(int fd, std::chrono::milliseconds deadline);

// When the peer closed each of `fds` (end of file or reset), watched together until all are
// closed or the deadline passes (a time_point{} for those still open then).
std::vector<std::chrono::steady_clock::time_point> WhenClosedByPeer(const std::vector<int>& fds,
                                                                    std::chrono::milliseconds deadline);

// Raises this process's soft descriptor limit to its hard one: the tests hold many sockets.
void RaiseDescriptorLimit();

}  // namespace ohio::testing
