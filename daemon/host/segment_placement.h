// Doing what shm/placement/numa_plan.h plans for a group's segment: reads its ranks' CPU affinity and
// asks the kernel to place the segment's memory on the chosen NUMA node. Never fatal: a
// segment the kernel would not bind still works, only further from its ranks.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "shm/placement/numa_plan.h"

namespace ohio {

// What was planned and done for one group's segment, for Status and ohioctl.
struct SegmentPlacement {
  bool decided = false;  // false until every local rank has joined
  NumaPlacement plan;
  bool bound = false;      // the kernel took the memory policy, or the host has one NUMA node
  std::string bind_error;  // why not, when a node was chosen and not bound
};

// The CPUs `pid` may run on (sched_getaffinity); empty if it cannot be read (it exited).
CpuList AllowedCpus(pid_t pid);

// Prefers NUMA node `node` for [base, base + bytes) of a shared memfd mapping, for every
// process mapping it, and moves there the pages already allocated (those other processes map
// too only with CAP_SYS_NICE).
Status PreferNode(void* base, uint64_t bytes, uint32_t node);

// Plans for the ranks `pids` on `topology`'s nodes and rails and binds the segment, unless there
// is one node to bind to; logs the outcome (at debug for one node), a refused bind as a warning.
SegmentPlacement PlaceSegment(const std::string& group, const std::vector<NumaNodeCpus>& nodes,
                              const std::vector<RailLocality>& rails, const std::vector<pid_t>& pids, void* base,
                              uint64_t bytes);

}  // namespace ohio
