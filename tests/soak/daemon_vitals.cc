#include "tests/soak/daemon_vitals.h"

#include <fstream>
#include <string>

#include "tests/harness/process.h"

namespace ohio::soak {

DaemonVitals SampleVitals(pid_t pid) {
  DaemonVitals v;
  v.fds = testing::CountOpenFds(pid, "");
  v.memfds = testing::CountOpenFds(pid, "memfd:ohio-group");
  v.memfd_maps = testing::CountMappings(pid, "memfd:ohio-group");
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) v.rss_kib = std::stoull(line.substr(6));
  }
  return v;
}

}  // namespace ohio::soak
