// Whether the ohiod at the other end of a control connection is stopped (SIGSTOP, a debugger,
// job control). A stopped daemon answers nothing and reports nothing until it is continued, so
// a rank that waited the group's timeout for it has nothing more to wait for: the grace a
// running daemon gets to say what went wrong (client/libohio/round_waiter.h) would be spent in vain.
// A hung daemon that is not stopped cannot be told from a slow one this way and gets the grace.
#pragma once

#include <sys/types.h>

namespace ohio {

// The daemon's pid as the kernel gave it when the connection was made (SO_PEERCRED); 0 when
// it is not known, e.g. a daemon in a PID namespace this process cannot see.
pid_t DaemonPid(int control_fd);

// Whether process `pid` is stopped now (state T or t in /proc/PID/stat). False when pid is 0
// or the process cannot be looked at.
bool ProcessStopped(pid_t pid);

}  // namespace ohio
