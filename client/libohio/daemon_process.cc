#include "client/libohio/daemon_process.h"

#include <sys/socket.h>

#include <fstream>
#include <sstream>
#include <string>

namespace ohio {

pid_t DaemonPid(int control_fd) {
  struct ucred cred = {};
  socklen_t len = sizeof(cred);
  if (getsockopt(control_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return 0;
  return cred.pid;
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

}  // namespace ohio
