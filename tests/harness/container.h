// A container as Apptainer (--containall) and podman-hpc make one for MPI ranks, built with
// util-linux's unshare alone (no image, nothing fetched): its own PID namespace with /proc
// mounted for it, its own mount namespace with a private /tmp and /dev/shm, and the host's ohiod
// control socket bind-mounted in at the path libohio expects by default. Processes are started
// in it with nsenter (as root, or as another uid through setpriv), so that several of them, of
// several users, can share one container, as the ranks of a job share one.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/harness/process.h"

namespace ohio::testing {

class Container {
 public:
  // Where the host's socket is inside: libohio's default (OHIO_DEFAULT_SOCKET).
  static constexpr const char* kSocket = "/run/ohio/ohiod.sock";
  // Where `dir` of the host is inside (bind-mounted): the tools copied there for any uid to
  // run (ToolAnyoneCanRun) are at kShared + "/" + their name.
  static constexpr const char* kShared = "/run/ohio-test";

  // Starts the container and waits (up to 30 s) until it is set up; ready() says whether it is.
  Container(const TempDir& dir, const std::string& name, const std::string& host_socket);
  // Kills the container's init, which takes every process in its PID namespace with it.
  ~Container();
  Container(const Container&) = delete;
  Container& operator=(const Container&) = delete;

  bool ready() const { return init_pid_ > 0; }
  // What the container's set-up printed (why it is not ready).
  std::string Log() const;
  // The host's pid of the container's init (pid 1 inside).
  pid_t init_pid() const { return init_pid_; }

  // Starts argv in the container (argv[0] a path as seen inside), as `uid` (and its gid, no
  // supplementary groups) if given; output to the host's `output_file`. The Process is the
  // nsenter that waits for it and exits with its code.
  std::unique_ptr<Process> Run(const std::vector<std::string>& argv, const std::string& output_file,
                               std::optional<uid_t> uid = std::nullopt) const;

 private:
  std::unique_ptr<Process> unshare_;
  pid_t init_pid_ = -1;
};

// The host pid of the one process that `parent` (a host pid) has as child; -1 if it has none
// within `deadline`.
pid_t ChildOf(pid_t parent, std::chrono::milliseconds deadline);

// The pid of host process `host_pid` in its own (innermost) PID namespace: the last NSpid of
// /proc/<pid>/status; -1 if unknown.
pid_t PidInItsNamespace(pid_t host_pid);

}  // namespace ohio::testing
