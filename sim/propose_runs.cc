#include "sim/propose_runs.h"

#include <sys/wait.h>
#include <unistd.h>

#include <iostream>

#include <nlohmann/json.hpp>

#include "shm/tables/internode_table_text.h"

namespace ohio::sim {
namespace {

// `argv` run as a process, its stdout (its stderr is this process's).
Result<std::string> RunForOutput(const std::vector<std::string>& argv) {
  int out[2];
  if (pipe(out) != 0) return Status(Code::kSystem, "pipe failed");
  const pid_t pid = fork();
  if (pid < 0) return Status(Code::kSystem, "fork failed");
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    close(out[1]);
    std::vector<std::string> copy = argv;
    std::vector<char*> args;
    for (std::string& a : copy) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string line;
    for (const std::string& a : argv) line += (line.empty() ? "" : " ") + a;
    return Status(Code::kSystem, "the simulation '" + line + "' failed (its error is above)");
  }
  return text;
}

}  // namespace

Result<std::vector<SimulatedPoint>> SimulateEachInterNode(const ProposeRuns& runs) {
  std::vector<SimulatedPoint> points;
  for (uint64_t n : runs.node_counts) {
    for (InterNodeAlgorithm algo : {InterNodeAlgorithm::kPairwise, InterNodeAlgorithm::kHypercube,
                                    InterNodeAlgorithm::kDirect}) {
      std::vector<std::string> argv = {runs.self, "run", "--platform", runs.platform, "--calibration",
                                       runs.calibration, "--nodes", std::to_string(n), "--ppn",
                                       std::to_string(runs.ppn), "--bytes", runs.bytes, "--iterations", "1",
                                       "--internode", InterNodeAlgorithmName(algo), "--max-slices", "2", "--json"};
      for (const std::string& c : runs.cfg) argv.insert(argv.end(), {"--cfg", c});
      std::cerr << "ohio-sim propose: " << n << " x " << runs.ppn << ", " << InterNodeAlgorithmName(algo) << "\n";
      Result<std::string> text = RunForOutput(argv);
      if (!text.ok()) return text.status();
      const nlohmann::json report = nlohmann::json::parse(text.value(), nullptr, false);
      if (report.is_discarded() || !report.contains("sizes")) {
        return Status(Code::kProtocol, "the report of ohio-sim run at " + std::to_string(n) + " nodes is not JSON");
      }
      for (const auto& s : report["sizes"]) {
        if (ParseInterNodeAlgorithmName(s["internode"].get<std::string>()) != algo) continue;
        points.push_back({static_cast<uint32_t>(n), runs.ppn, s["bytes"].get<uint64_t>(), algo,
                          s["median_s"].get<double>()});
      }
    }
  }
  return points;
}

}  // namespace ohio::sim
