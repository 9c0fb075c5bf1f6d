#include "client/libohio/daemon_process.h"

#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace ohio {

pid_t DaemonPid(int control_fd) {
  struct ucred cred = {};
  socklen_t len = sizeof(cred);
  if (getsockopt(control_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return 0;
  return ProcIsOfOwnPidNamespace() ? cred.pid : 0;
}

bool ProcIsOfOwnPidNamespace() {
  char self[32];
  const ssize_t n = readlink("/proc/self", self, sizeof(self) - 1);
  if (n <= 0) return false;
  self[n] = '\0';
  return std::to_string(getpid()) == self;
}

bool ProcessStopped(pid_t pid) {
  if (pid <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::stringstream text;
  text << in.rdbuf();
  const std::string stat = text.str();
  // "PID (COMM) STATE ...": COMM may itself hold ") ", so the state follows the last one.
  const size_t close = stat.rfind(") ");
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  const char state = stat[close + 2];
  return state == 'T' || state == 't';
}

std::string DaemonStateNote(pid_t pid) {
  if (pid == 0) {
    return "; whether ohiod is stopped cannot be told: its process is not visible in this rank's PID namespace "
           "(a container's own); run the ranks in the host's PID namespace to have a stopped ohiod told at once";
  }
  return ProcessStopped(pid) ? "; ohiod (pid " + std::to_string(pid) + ") is stopped" : "";
}

}  // namespace ohio
