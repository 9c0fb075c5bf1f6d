// A process stopped (SIGSTOP) for a test's scope, as a debugger or job control would stop a
// daemon, and continued at the end of the scope whatever happened: a stopped daemon would not
// take the fixture's SIGTERM.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/harness/wait_until.h"

namespace ohio::testing {

// The state letter of /proc/PID/stat ('T' when stopped), '?' if it cannot be read.
inline char ProcessState(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::stringstream text;
  text << in.rdbuf();
  const std::string stat = text.str();
  // "PID (COMM) STATE ...": COMM may itself hold ") ".
  const size_t close = stat.rfind(") ");
  return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
}

class StoppedForScope {
 public:
  explicit StoppedForScope(pid_t pid) : pid_(pid) {
    kill(pid_, SIGSTOP);
    stopped_ = WaitUntil([this] { return ProcessState(pid_) == 'T'; }, std::chrono::seconds(10));
  }
  ~StoppedForScope() { Continue(); }
  StoppedForScope(const StoppedForScope&) = delete;
  StoppedForScope& operator=(const StoppedForScope&) = delete;
  // Whether the process was seen stopped (within 10 s of the signal).
  bool stopped() const { return stopped_; }
  void Continue() {
    if (pid_ > 0) kill(pid_, SIGCONT);
    pid_ = -1;
  }

 private:
  pid_t pid_;
  bool stopped_ = false;
};

}  // namespace ohio::testing
