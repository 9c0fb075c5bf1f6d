// Real processes for integration tests: started with fork/exec, output captured to a file,
// every wait bounded by a deadline (a process still running then is killed and reported).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace ohio::testing {

// Path of a binary built by Bazel and listed in the test's data, e.g. "daemon/ohiod".
std::string RunfilePath(const std::string& relative);

// A fresh directory under /tmp (short, so unix socket paths fit), removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

class Process {
 public:
  // Starts argv[0] with argv; stdout and stderr go to output_file. If run_as_uid is set,
  // the child drops to that uid (and its gid) before exec.
  Process(const std::vector<std::string>& argv, const std::string& output_file,
          std::optional<uid_t> run_as_uid = std::nullopt);
  ~Process();  // kills the process if it is still running
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  // Waits for exit; returns the exit code, 128+signal if killed by a signal, or -1 if the
  // deadline passed (the process is then killed with SIGKILL).
  int Wait(std::chrono::milliseconds deadline);
  bool Running();
  void Signal(int sig);
  std::string Output() const;
  // Waits until the output contains `text`; false at the deadline.
  bool WaitForOutput(const std::string& text, std::chrono::milliseconds deadline) const;

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string output_file_;
};

// Files a process has open whose link target contains `needle` (e.g. "memfd:ohio-group").
int CountOpenFds(pid_t pid, const std::string& needle);
// Mappings of a process whose line in /proc/PID/maps contains `needle`.
int CountMappings(pid_t pid, const std::string& needle);

}  // namespace ohio::testing
