#include "common/host_cpus.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace ohio {
namespace {

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<double> Positive(double quota, double period) {
  if (!(quota > 0) || !(period > 0)) return std::nullopt;
  return quota / period;
}

// Where this process's cgroup sits below a hierarchy's mount ("/" inside most containers, whose
// /sys/fs/cgroup is their own cgroup), from /proc/self/cgroup lines "ID:CONTROLLERS:PATH".
std::optional<std::string> CgroupPath(const std::string& self_cgroup, bool v2) {
  std::istringstream lines(self_cgroup);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t first = line.find(':');
    const size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    bool match = v2 && controllers.empty();
    if (!v2) {
      std::istringstream names(controllers);
      std::string name;
      while (std::getline(names, name, ',')) match |= name == "cpu";
    }
    if (match) return line.substr(second + 1);
  }
  return std::nullopt;
}

// The quota of the first place that has one: the process's own cgroup, then the mount's root.
std::optional<double> CgroupQuota() {
  const auto self = ReadFile("/proc/self/cgroup");
  if (!self) return std::nullopt;
  if (const auto path = CgroupPath(*self, /*v2=*/true)) {
    for (const std::string& dir : {"/sys/fs/cgroup" + *path, std::string("/sys/fs/cgroup")}) {
      if (const auto text = ReadFile(dir + "/cpu.max")) return CpusOfCpuMax(*text);
    }
  }
  if (const auto path = CgroupPath(*self, /*v2=*/false)) {
    for (const std::string mount : {"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"}) {
      for (const std::string& dir : {mount + *path, mount}) {
        const auto quota = ReadFile(dir + "/cpu.cfs_quota_us");
        const auto period = ReadFile(dir + "/cpu.cfs_period_us");
        if (quota && period) return CpusOfCfsQuota(*quota, *period);
      }
    }
  }
  return std::nullopt;
}

}  // namespace

uint32_t UsableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  const int n = CPU_COUNT(&set);
  return n > 0 ? static_cast<uint32_t>(n) : 1;
}

double HostCpus() {
  const double mask = UsableCpus();
  const auto quota = CgroupQuota();
  return quota ? std::min(mask, *quota) : mask;
}

double CpusOfSetting(const std::string& setting) {
  if (setting == "auto") return HostCpus();
  const double cpus = std::strtod(setting.c_str(), nullptr);
  return cpus > 0 ? cpus : HostCpus();
}

std::optional<double> CpusOfCpuMax(const std::string& text) {
  std::istringstream in(text);
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max") return std::nullopt;
  char* end = nullptr;
  const double q = std::strtod(quota.c_str(), &end);
  if (end == quota.c_str() || *end != '\0') return std::nullopt;
  return Positive(q, period);
}

std::optional<double> CpusOfCfsQuota(const std::string& quota, const std::string& period) {
  double q = 0, p = 0;
  if (!(std::istringstream(quota) >> q) || !(std::istringstream(period) >> p)) return std::nullopt;
  return Positive(q, p);
}

}  // namespace ohio
