// How many CPUs this process may run on: its affinity mask, at least 1. What "oversubscribed"
// is measured against, by ranks (more ranks of a group on the node) and by the daemon's engine
// (ranks of its groups plus itself).
#pragma once

#include <sched.h>

#include <cstdint>

namespace ohio {

inline uint32_t UsableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  const int n = CPU_COUNT(&set);
  return n > 0 ? static_cast<uint32_t>(n) : 1;
}

}  // namespace ohio
