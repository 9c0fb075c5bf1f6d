#include "client/libohio/single_copy.h"

#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>

namespace ohio {

bool SingleCopyPossible() {
  static const bool possible = [] {
    std::ifstream scope("/proc/sys/kernel/yama/ptrace_scope");
    int value = 0;
    // No Yama (no file) means no restriction beyond the user check.
    if (scope && !(scope >> value)) return false;
    return value == 0 && prctl(PR_GET_DUMPABLE) == 1;
  }();
  return possible;
}

uint64_t SingleCopyThresholdFor(const char* env, bool oversubscribed) {
  if (env == nullptr || *env == '\0') return oversubscribed ? uint64_t{262144} : uint64_t{32768};
  const uint64_t n = std::strtoull(env, nullptr, 10);
  return n == 0 ? ~uint64_t{0} : n;
}

uint64_t SingleCopyThreshold(bool oversubscribed) {
  static const char* const env = std::getenv("OHIO_SINGLE_COPY_BYTES");
  return SingleCopyThresholdFor(env, oversubscribed);
}

ReadOutcome ReadFromRank(pid_t pid, uint64_t remote, void* local, uint64_t bytes, std::string* why) {
  uint64_t done = 0;
  while (done < bytes) {
    struct iovec l = {static_cast<uint8_t*>(local) + done, bytes - done};
    struct iovec r = {reinterpret_cast<void*>(remote + done), bytes - done};
    const ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n > 0) {
      done += static_cast<uint64_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == ESRCH) return ReadOutcome::kGone;
    *why = n < 0 ? std::strerror(errno) : "no progress";
    return n < 0 && errno == EFAULT ? ReadOutcome::kBadAddress : ReadOutcome::kRefused;
  }
  return ReadOutcome::kDone;
}

void SayRefusedOnce(pid_t pid, const std::string& why) {
  static std::once_flag said;
  std::call_once(said, [&] {
    std::fprintf(stderr,
                 "ohio: the kernel refused to let this process read rank memory of pid %d (%s); "
                 "the group copies through shared memory instead (two copies)\n",
                 static_cast<int>(pid), why.c_str());
  });
}

uint64_t PidNamespaceIdOf(uint64_t device, uint64_t inode) {
  // Namespace inodes are 32-bit numbers (proc_alloc_inum) on the one nsfs device.
  return device << 32 | (inode & 0xffffffffu);
}

uint64_t PidNamespaceId() {
  static const uint64_t id = [] {
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) != 0) return uint64_t{0};
    return PidNamespaceIdOf(st.st_dev, st.st_ino);
  }();
  return id;
}

void SaySeparatePidNamespacesOnce() {
  static std::once_flag said;
  std::call_once(said, [] {
    std::fprintf(stderr,
                 "ohio: the ranks of this group on this node are not all in one PID namespace (separate "
                 "containers, or a container without /proc), so one cannot name another's process to read its "
                 "buffer in place; the group copies through shared memory instead (two copies). Run a job's "
                 "ranks of one node in one container (one PID namespace) to read in place, or set "
                 "OHIO_SINGLE_COPY_BYTES=0 to not try\n");
  });
}

}  // namespace ohio
