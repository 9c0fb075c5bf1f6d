// Unix stream socket addressing and connecting, shared by ohiod, libohio and the tests.
#pragma once

#include <sys/un.h>

#include <string>

#include "common/status.h"

namespace ohio {

// The address for `path`, or kInvalidArgument if it does not fit sun_path (108 bytes).
Result<struct sockaddr_un> UnixAddress(const std::string& path);

// A connected, close-on-exec stream socket; kNoDaemon with the reason if nobody accepts.
Result<int> ConnectUnix(const std::string& path);

}  // namespace ohio
