#include "daemon/engine/rank_memory.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "common/unix_socket.h"

namespace ohio {
namespace {

// For the open of /proc/<pid>/mem only, this thread acts as the rank's user: its filesystem
// ids are the user's (the kernel judges the open of /proc/<pid>/mem by them) and its effective
// capabilities are none, as a user's process has (with CAP_SYS_PTRACE root passes every ptrace
// check, and the kernel also wants the target's permitted capabilities within the caller's
// effective ones, which keeps out a program given file capabilities). All of these are
// per-thread: setfsuid, setfsgid and capset change the calling thread alone, so the daemon's
// other threads keep their rights. The real and saved uids stay root's: with the user's real
// uid the thread could be signalled by that user (tgkill), and a signal that kills takes the
// whole daemon. A rank of root's is opened with root's rights, which are its user's.
class ActingAsUser {
 public:
  ActingAsUser(uid_t uid, gid_t gid) : acting_(uid != 0) {
    if (!acting_) return;
    header_.version = _LINUX_CAPABILITY_VERSION_3;
    header_.pid = 0;
    have_caps_ = syscall(SYS_capget, &header_, saved_) == 0;
    previous_gid_ = static_cast<gid_t>(setfsgid(gid));
    previous_uid_ = static_cast<uid_t>(setfsuid(uid));
    if (have_caps_) {
      __user_cap_data_struct none[2];
      std::memcpy(none, saved_, sizeof(none));
      none[0].effective = 0;
      none[1].effective = 0;
      syscall(SYS_capset, &header_, none);
    }
  }
  ~ActingAsUser() {
    if (!acting_) return;
    // Capabilities first: setting the filesystem ids back takes CAP_SETUID and CAP_SETGID.
    if (have_caps_) syscall(SYS_capset, &header_, saved_);
    setfsuid(previous_uid_);
    setfsgid(previous_gid_);
  }
  ActingAsUser(const ActingAsUser&) = delete;
  ActingAsUser& operator=(const ActingAsUser&) = delete;

 private:
  const bool acting_;
  __user_cap_header_struct header_{};
  __user_cap_data_struct saved_[2]{};
  bool have_caps_ = false;
  uid_t previous_uid_ = 0;
  gid_t previous_gid_ = 0;
};

bool PidfdExited(int pidfd) {
  struct pollfd p = {pidfd, POLLIN, 0};
  return poll(&p, 1, 0) == 1;  // a pidfd is readable once its process has exited
}

}  // namespace

Result<std::shared_ptr<const RankMemory>> RankMemory::Open(pid_t pid, int pidfd, uid_t uid, gid_t gid) {
  const std::string who = "process " + std::to_string(pid);
  int own_pidfd = pidfd >= 0 ? fcntl(pidfd, F_DUPFD_CLOEXEC, 0) : OpenPidfd(pid);
  if (own_pidfd < 0 && errno == ESRCH) return Status(Code::kGroupFailed, who + " is gone");
  if (own_pidfd < 0) return SystemError("a pidfd of " + who, errno);
  int mem_fd = -1;
  int open_errno = 0;
  {
    ActingAsUser as_user(uid, gid);
    mem_fd = open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDWR | O_CLOEXEC);
    open_errno = errno;
  }
  // Opened while the process that connected still lives: its pid was not yet anyone else's.
  if (mem_fd >= 0 && PidfdExited(own_pidfd)) {
    close(mem_fd);
    mem_fd = -1;
    open_errno = ESRCH;
  }
  if (mem_fd < 0) {
    close(own_pidfd);
    if (open_errno == ENOENT || open_errno == ESRCH) return Status(Code::kGroupFailed, who + " is gone");
    return Status(Code::kRefused, "ohiod may not read or write the memory of " + who + " with the rights of uid " +
                                      std::to_string(uid) + " (" + std::strerror(open_errno) +
                                      "): a process that is not its user's own to debug, such as a setuid "
                                      "program, does not get nonblocking calls moved by ohiod");
  }
  return std::shared_ptr<const RankMemory>(new RankMemory(pid, own_pidfd, mem_fd));
}

RankMemory::~RankMemory() {
  close(mem_fd_);
  close(pidfd_);
}

bool RankMemory::Exited() const { return PidfdExited(pidfd_); }

ssize_t RankMemory::Transfer(const std::vector<iovec>& local, const std::vector<iovec>& remote, bool writing) const {
  ssize_t total = 0;
  size_t i = 0;
  while (i < local.size()) {
    // A run of pieces whose remote ends follow each other is one system call from one offset.
    size_t end = i + 1;
    size_t asked = local[i].iov_len;
    while (end < local.size() && end - i < IOV_MAX &&
           static_cast<char*>(remote[end - 1].iov_base) + remote[end - 1].iov_len == remote[end].iov_base) {
      asked += local[end].iov_len;
      ++end;
    }
    if (asked != 0) {
      const auto offset = static_cast<off_t>(reinterpret_cast<uintptr_t>(remote[i].iov_base));
      const int count = static_cast<int>(end - i);
      const ssize_t moved = writing ? pwritev(mem_fd_, &local[i], count, offset) : preadv(mem_fd_, &local[i], count, offset);
      if (moved < 0) {
        // The kernel says EIO for an address it could not reach; EINVAL for one past any.
        if (errno == EIO || errno == EINVAL) errno = EFAULT;
        return total > 0 ? total : -1;
      }
      total += moved;
      if (static_cast<size_t>(moved) != asked) {
        // Nothing at all: the address space that joined has no users left (exec or exit).
        errno = moved == 0 ? ESRCH : EFAULT;
        return total;
      }
    }
    i = end;
  }
  return total;
}

}  // namespace ohio
