#include "daemon/host/segment_placement.h"

#include <linux/mempolicy.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <climits>

#include <spdlog/spdlog.h>

namespace ohio {
namespace {

constexpr uint32_t kMaxNodes = 1024;

bool NodeExists(uint32_t node) {
  struct stat st;
  return stat(("/sys/devices/system/node/node" + std::to_string(node)).c_str(), &st) == 0;
}

std::string RailText(const std::vector<std::string>& rails) {
  std::string s;
  for (const auto& r : rails) s += (s.empty() ? "" : ", ") + r;
  return s.empty() ? "none" : s;
}

}  // namespace

CpuList AllowedCpus(pid_t pid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(pid, sizeof(set), &set) != 0) return {};
  CpuList out;
  for (uint32_t c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}

Status PreferNode(void* base, uint64_t bytes, uint32_t node) {
  if (node >= kMaxNodes) return Status(Code::kInvalidArgument, "NUMA node " + std::to_string(node) + " is out of range");
  constexpr size_t kBits = sizeof(unsigned long) * CHAR_BIT;
  std::array<unsigned long, kMaxNodes / kBits> mask{};
  mask[node / kBits] = 1UL << (node % kBits);
  // MPOL_PREFERRED, not MPOL_BIND: placement only makes the segment faster. Under BIND a full
  // node would make a rank's first touch of a segment page fail (OOM kill or SIGBUS); under
  // PREFERRED the page comes from another node. On a memfd the policy is the file's shared
  // policy, so pages the ranks fault in through their own mappings follow it too. The ranks
  // joined before this and have touched the first pages: MOVE_ALL moves those too (it needs
  // CAP_SYS_NICE, which ohiod has as root); without it MOVE moves only those no rank maps.
  auto prefer = [&](unsigned flags) {
    return syscall(SYS_mbind, base, bytes, MPOL_PREFERRED, mask.data(), kMaxNodes + 1, flags);
  };
  if (prefer(MPOL_MF_MOVE | MPOL_MF_MOVE_ALL) != 0 && (errno != EPERM || prefer(MPOL_MF_MOVE) != 0)) {
    return SystemError("mbind(MPOL_PREFERRED, node " + std::to_string(node) + ")", errno);
  }
  return Status::Ok();
}

SegmentPlacement PlaceSegment(const std::string& group, const std::vector<NumaNodeCpus>& nodes,
                              const std::vector<RailLocality>& rails, const std::vector<pid_t>& pids, void* base,
                              uint64_t bytes) {
  std::vector<CpuList> rank_cpus;
  for (pid_t pid : pids) rank_cpus.push_back(AllowedCpus(pid));
  SegmentPlacement p;
  p.decided = true;
  p.plan = PlanNumaPlacement(nodes, rank_cpus, rails);
  if (!p.plan.node) {
    spdlog::info("group {}: segment on no particular NUMA node ({}); rails {}", group, p.plan.why,
                 RailText(p.plan.rail_order));
    return p;
  }
  const uint32_t node = *p.plan.node;
  if (nodes.size() == 1) {
    // Every page is on the only node whatever the policy says. mbind is not free: moving pages
    // drains every CPU's LRU lists, which waits for each CPU (long on a busy host), and it sits
    // on the last rank's join, so on the first call of every communicator.
    p.bound = true;
    spdlog::debug("group {}: segment on NUMA node {} ({}), the only one; rails {}", group, node, p.plan.why,
                  RailText(p.plan.rail_order));
    return p;
  }
  const Status s = PreferNode(base, bytes, node);
  p.bound = s.ok();
  if (p.bound) {
    spdlog::info("group {}: segment on NUMA node {} ({}); rails {}", group, node, p.plan.why,
                 RailText(p.plan.rail_order));
    return p;
  }
  p.bind_error = s.message();
  if (!NodeExists(node)) p.bind_error += "; this machine has no NUMA node " + std::to_string(node);
  // Once per daemon: every later group would say the same, and Status shows it per group.
  static std::atomic<bool> warned{false};
  const bool first = !warned.exchange(true);
  spdlog::log(first ? spdlog::level::warn : spdlog::level::debug,
              "group {}: NUMA node {} chosen for the segment ({}) but not bound: {}; the group works, its memory "
              "wherever the kernel puts it",
              group, node, p.plan.why, p.bind_error);
  return p;
}

}  // namespace ohio
