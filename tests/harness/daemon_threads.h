// A daemon's threads, told apart by their names (/proc/PID/task/*/comm): ohio's own keep the
// program's name ("ohiod"), and gRPC's pools name theirs (default-executor, event_engine,
// grpcpp_sync_server, timer_manager, ...). The two answer different questions: ohio's own
// threads are ohio's design and do not grow with the peers a daemon talks to; gRPC's pools size
// themselves by the load of the moment (more right after 32 daemons have met than at rest).
#pragma once

#include <sys/types.h>

#include <fstream>
#include <map>
#include <string>
#include <system_error>
#include <filesystem>

namespace ohio::testing {

struct DaemonThreads {
  uint32_t own = 0;      // named as the program
  uint32_t library = 0;  // named otherwise: gRPC's
  std::map<std::string, uint32_t> by_name;
  uint32_t total() const { return own + library; }
  // "ohiod x5, event_engine x2, ...": for a failure's message.
  std::string Describe() const {
    std::string out;
    for (const auto& [name, n] : by_name) out += (out.empty() ? "" : ", ") + name + " x" + std::to_string(n);
    return out;
  }
};

inline DaemonThreads CountThreads(pid_t pid, const std::string& program = "ohiod") {
  DaemonThreads t;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::string name;
    std::getline(std::ifstream(task.path() / "comm"), name);
    if (name.empty()) continue;  // the thread ended while it was read
    ++t.by_name[name];
    if (name == program) {
      ++t.own;
    } else {
      ++t.library;
    }
  }
  return t;
}

}  // namespace ohio::testing
