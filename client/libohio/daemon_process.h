// Whether the ohiod at the other end of a control connection is stopped (SIGSTOP, a debugger,
// job control). A stopped daemon answers nothing and reports nothing until it is continued, so
// a rank that waited the group's timeout for it has nothing more to wait for: the grace a
// running daemon gets to say what went wrong (client/libohio/round_waiter.h) would be spent in vain.
// A hung daemon that is not stopped cannot be told from a slow one this way and gets the grace.
#pragma once

#include <sys/types.h>

#include <string>

namespace ohio {

// The daemon's pid as the kernel gave it when the connection was made (SO_PEERCRED); 0 when
// it cannot be looked at: a rank in a container's own PID namespace, with the daemon's socket
// bind-mounted in, does not see the host's ohiod (the kernel says pid 0), and a /proc mounted
// for another PID namespace than this process's would show another process under that number.
pid_t DaemonPid(int control_fd);

// Whether the /proc mounted here is that of this process's own PID namespace (/proc/self is
// getpid()): only then does /proc/<pid> show the process `pid` names.
bool ProcIsOfOwnPidNamespace();

// Whether process `pid` is stopped now (state T or t in /proc/PID/stat). False when pid is 0
// or the process cannot be looked at.
bool ProcessStopped(pid_t pid);

// What a timeout waiting for ohiod adds about its process: "; ohiod (pid N) is stopped" when
// it is, why that cannot be told when its pid is 0 (and what to set), else nothing.
std::string DaemonStateNote(pid_t pid);

}  // namespace ohio
