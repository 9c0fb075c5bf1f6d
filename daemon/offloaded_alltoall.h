// Nonblocking alltoalls of a group on one node, moved by the daemon while the ranks compute
// (ohio_ialltoall). A rank posts a call in its slot's ring (the addresses of its send and
// receive buffers in its own address space, and M) and goes back to its work; once every
// local rank has posted call s, the daemon reads every rank's row with process_vm_readv and
// writes every rank's column with process_vm_writev, publishes the outcome and
// offload_done = s, and wakes the ranks that sleep on it. A rank's wait is then only a look at
// offload_done: no copy is left for it to do.
//
// The daemon is root, so the kernel lets it read and write its ranks (CAP_SYS_PTRACE); the
// pids are the ones SO_PEERCRED gave at join, never what a rank wrote in the segment.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/counters.h"
#include "shm/group_shape.h"
#include "shm/segment.h"

namespace ohio {

class OffloadedAlltoall {
 public:
  OffloadedAlltoall(const Segment* segment, const GroupShape* shape);

  // Local rank l's process, from its join (control thread).
  void SetPid(uint32_t l, pid_t pid) { pids_[l].store(pid, std::memory_order_release); }
  // Moves every call that all local ranks have posted (progress engine thread); true if any.
  bool Advance(DaemonCounters* counters);
  // At every watch tick: if some ranks have posted the next call and others have not for
  // `timeout`, why (naming the ranks missing); the group's timeout applies as to a round.
  std::optional<std::string> Stalled(std::chrono::steady_clock::time_point now, std::chrono::milliseconds timeout);

 private:
  bool AllPosted(uint32_t call) const;
  Status Move(uint32_t call, uint64_t m);
  void Publish(uint32_t call, const Status& outcome);

  const Segment* segment_;
  const GroupShape* shape_;
  uint32_t ranks_;
  std::unique_ptr<std::atomic<pid_t>[]> pids_;
  std::vector<uint8_t> rows_;  // every rank's row of the call being moved
  uint32_t watched_call_ = 0;  // the call some rank posted and others not, at the last tick
  std::chrono::steady_clock::time_point watched_since_;
};

}  // namespace ohio
