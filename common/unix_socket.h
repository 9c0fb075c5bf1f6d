// Unix stream socket addressing and connecting, shared by ohiod, libohio and the tests.
#pragma once

#include <sys/un.h>

#include <chrono>
#include <string>

#include "common/status.h"

namespace ohio {

// The address for `path`, or kInvalidArgument if it does not fit sun_path (108 bytes).
Result<struct sockaddr_un> UnixAddress(const std::string& path);

// A connected, close-on-exec stream socket; kNoDaemon with the reason if nobody accepts.
Result<int> ConnectUnix(const std::string& path);
// The same, never waiting past `within` for the listener to take the connection: a listener
// whose backlog is full (stopped, hung, flooded with connects) fails it with kTimeout, saying
// ohiod did not accept the connection in time. The socket returned is blocking, as ConnectUnix's.
Result<int> ConnectUnixWithin(const std::string& path, std::chrono::milliseconds within);

// A pidfd (close-on-exec, as pidfds are) of process `pid` as it is now, or -1 with errno (ESRCH:
// no such process).
int OpenPidfd(pid_t pid);

// A pidfd (close-on-exec) of the process that connected the accepted socket `fd`: the kernel's
// own (SO_PEERPIDFD), which names that process even if it exited and its pid was reused
// since; where the kernel has none (before Linux 6.5), one opened for `pid` now. -1 if the
// process is gone.
int PeerPidfd(int fd, pid_t pid);

}  // namespace ohio
