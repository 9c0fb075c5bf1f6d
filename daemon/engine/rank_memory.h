// A local rank's address space, as ohiod may read and write it for the nonblocking calls it
// moves on the ranks' behalf (nonblocking_alltoall.h, nonblocking_across_nodes_alltoall.h).
//
// ohiod is root, and root may read and write any process. So the daemon never names the
// rank's process by its pid when it moves bytes: a pid is a number that outlives nothing (the
// rank can exec a setuid-root program under the same pid, or exit and have its pid reused),
// and process_vm_readv/writev would act on whatever the number names at that moment, with
// root's rights. Instead, at join, ohiod opens /proc/<pid>/mem of the process that connected
// (its pidfd from SO_PEERPIDFD, so the pid cannot have been reused in between) with the
// rights of the uid and gid SO_PEERCRED gave: this thread's filesystem ids set to them and no
// effective capabilities, for the open. The kernel then judges the open as it judges the
// user's own ptrace: same uid and gid, process dumpable, no capabilities the user lacks. A
// setuid or file-capability program, or one that changed its credentials, is refused.
//
// The open file is bound to the address space the process had at that moment, not to the
// pid: after an exec, or once the process is gone (and its pid perhaps another process's), a
// read or write through it moves nothing. So every move reaches exactly the memory the user
// could already reach, for as long as it is the memory that joined, and never anything else.
// The price: the kernel copies /proc/<pid>/mem through a page of its own, about twice the
// time of process_vm_readv for large moves (docs/SECURITY.md).
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace ohio {

class RankMemory {
 public:
  // The address space of process `pid` (pidfd: a pidfd of that process taken when it
  // connected, or -1 to take one now), opened with the rights of `uid` and `gid`. Refused with
  // the kernel's reason when that user may not ptrace the process.
  static Result<std::shared_ptr<const RankMemory>> Open(pid_t pid, int pidfd, uid_t uid, gid_t gid);
  ~RankMemory();
  RankMemory(const RankMemory&) = delete;
  RankMemory& operator=(const RankMemory&) = delete;

  pid_t pid() const { return pid_; }

  // Reads (or writes) the paired pieces: local[i] from (into) remote[i] in the rank's address
  // space. The bytes moved, or -1 with errno set; fewer than asked when the move stopped:
  // errno ESRCH when the address space that joined is gone (exec, exit), EFAULT when a remote
  // piece is not mapped.
  ssize_t Transfer(const std::vector<iovec>& local, const std::vector<iovec>& remote, bool writing) const;

  // Whether the process that joined has exited (as opposed to having run another program).
  bool Exited() const;

 private:
  RankMemory(pid_t pid, int pidfd, int mem_fd) : pid_(pid), pidfd_(pidfd), mem_fd_(mem_fd) {}

  pid_t pid_;
  int pidfd_;
  int mem_fd_;
};

// What a group keeps of a local rank's address space: the memory, or why ohiod may not touch
// it (then every nonblocking call of the group fails with that reason).
struct RankMemoryAccess {
  std::shared_ptr<const RankMemory> memory;
  std::string refusal;
};

}  // namespace ohio
