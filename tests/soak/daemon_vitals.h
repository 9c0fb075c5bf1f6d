// What a daemon holds, read from /proc: the leak checks of the soak compare these before the
// chaos and after every job has left.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace ohio::soak {

struct DaemonVitals {
  int fds = -1;           // open file descriptors
  int memfds = -1;        // of them, group segments (memfd)
  int memfd_maps = -1;    // mappings of memfds
  uint64_t rss_kib = 0;   // VmRSS
};

DaemonVitals SampleVitals(pid_t pid);

}  // namespace ohio::soak
