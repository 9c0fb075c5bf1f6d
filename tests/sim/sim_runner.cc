#include "tests/sim/sim_runner.h"

#include <algorithm>

#include "tests/harness/process.h"

namespace ohio::testing {

std::string ThisBoxPlatform() { return RunfilePath("sim/platforms/this-box.xml"); }
std::string ThisBoxCalibration() { return RunfilePath("sim/calibration/this-box.txt"); }

SimRun RunOhioSimRaw(const std::vector<std::string>& args, std::chrono::seconds deadline) {
  TempDir dir;
  std::vector<std::string> argv = {RunfilePath("sim/ohio-sim")};
  argv.insert(argv.end(), args.begin(), args.end());
  Process p(argv, dir.file("out"));
  SimRun run;
  run.exit_code = p.Wait(deadline);
  run.output = p.Output();
  return run;
}

SimRun RunOhioSim(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"run", "--json"};
  auto has = [&](const std::string& flag) { return std::find(args.begin(), args.end(), flag) != args.end(); };
  if (!has("--platform")) all.insert(all.end(), {"--platform", ThisBoxPlatform()});
  if (!has("--calibration")) all.insert(all.end(), {"--calibration", ThisBoxCalibration()});
  all.insert(all.end(), args.begin(), args.end());
  SimRun run = RunOhioSimRaw(all);
  if (run.exit_code == 0) {
    // SimGrid may log warnings to stderr, which shares the file: the report is the last line.
    const size_t end = run.output.find_last_not_of('\n');
    const size_t start = run.output.rfind('\n', end);
    run.report = nlohmann::json::parse(run.output.substr(start == std::string::npos ? 0 : start + 1), nullptr, false);
  }
  return run;
}

}  // namespace ohio::testing
