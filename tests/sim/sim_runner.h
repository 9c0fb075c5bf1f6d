// Runs the ohio-sim binary as a user does (it may hold one SimGrid engine per process) and
// reads its JSON report.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ohio::testing {

struct SimRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
  nlohmann::json report;  // parsed when exit_code is 0
};

// ohio-sim run with `args` after --platform (this-box.xml) and --calibration (this-box.txt),
// unless args name their own; --json is added. Deadline: 120 s.
SimRun RunOhioSim(const std::vector<std::string>& args);
// ohio-sim with exactly `args`.
SimRun RunOhioSimRaw(const std::vector<std::string>& args, std::chrono::seconds deadline = std::chrono::seconds(120));

// The shipped platform and calibration, as runfile paths.
std::string ThisBoxPlatform();
std::string ThisBoxCalibration();

}  // namespace ohio::testing
