#include "tests/harness/rank_job.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "tests/harness/daemon_fixture.h"

namespace ohio::testing {

std::string RankToolAnyoneCanRun(const TempDir& dir) { return ToolAnyoneCanRun(dir, "tests/tools/alltoall_rank"); }

std::string ToolAnyoneCanRun(const TempDir& dir, const std::string& runfile) {
  const std::string tool = dir.file(runfile.substr(runfile.rfind('/') + 1));
  if (access(tool.c_str(), X_OK) == 0) return tool;
  const std::string partial = tool + ".partial";
  {
    std::ifstream in(RunfilePath(runfile), std::ios::binary);
    std::ofstream out(partial, std::ios::binary);
    out << in.rdbuf();
  }
  chmod(partial.c_str(), 0755);
  rename(partial.c_str(), tool.c_str());  // never a half-written tool under the final name
  chmod(dir.path().c_str(), 0755);
  return tool;
}

RankJob::RankJob(const TempDir& dir, const std::string& socket, const std::string& name, uint32_t size,
                 const std::vector<std::string>& common,
                 const std::function<std::vector<std::string>(uint32_t)>& extra, const std::string& tool) {
  for (uint32_t r = 0; r < size; ++r) {
    std::vector<std::string> argv = {RunfilePath(tool), "--socket", socket, "--key",
                                     KeyHex(name), "--size", std::to_string(size), "--rank", std::to_string(r)};
    argv.insert(argv.end(), common.begin(), common.end());
    if (extra) {
      auto more = extra(r);
      argv.insert(argv.end(), more.begin(), more.end());
    }
    ranks_.push_back(std::make_unique<Process>(argv, dir.file(name + ".rank" + std::to_string(r) + ".out")));
  }
}

RankJob::RankJob(const TempDir& dir, const std::vector<std::string>& sockets,
                 const std::vector<std::string>& node_names, const std::vector<uint32_t>& rank_node,
                 const std::string& name, const std::vector<std::string>& common,
                 const std::function<std::vector<std::string>(uint32_t)>& extra, std::optional<uid_t> run_as_uid,
                 const std::string& rank_tool) {
  const uint32_t size = static_cast<uint32_t>(rank_node.size());
  const std::string tool = run_as_uid ? RankToolAnyoneCanRun(dir) : RunfilePath(rank_tool);
  std::vector<std::string> placement = {"--nodes"};
  placement.insert(placement.end(), node_names.begin(), node_names.end());
  placement.push_back("--rank-node");
  for (uint32_t n : rank_node) placement.push_back(std::to_string(n));
  for (uint32_t r = 0; r < size; ++r) {
    std::vector<std::string> argv = {tool, "--socket", sockets[rank_node[r]],
                                     "--key", KeyHex(name), "--size", std::to_string(size), "--rank",
                                     std::to_string(r)};
    argv.insert(argv.end(), placement.begin(), placement.end());
    argv.insert(argv.end(), common.begin(), common.end());
    if (extra) {
      auto more = extra(r);
      argv.insert(argv.end(), more.begin(), more.end());
    }
    ranks_.push_back(
        std::make_unique<Process>(argv, dir.file(name + ".rank" + std::to_string(r) + ".out"), run_as_uid));
  }
}

std::vector<int> RankJob::Wait(std::chrono::milliseconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  std::vector<int> codes;
  for (auto& p : ranks_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    codes.push_back(p->Wait(std::max(left, std::chrono::milliseconds(1))));
  }
  return codes;
}

std::string RankJob::Outputs() const {
  std::string s;
  for (const auto& p : ranks_) s += p->Output();
  return s;
}

bool ToldGroupFailed(const std::string& output, const std::string& key_hex, const std::string& why,
                     const std::vector<std::string>& nodes) {
  std::vector<std::string> reasons = {why};
  for (const std::string& n : nodes) reasons.push_back("group " + key_hex + " has failed on node " + n + ": " + why);
  for (const std::string& reason : reasons) {
    if (output.find("code=7 (group failed) " + reason + "; the group is closed") != std::string::npos ||
        output.find("join error code=7 (group failed) group " + key_hex + " has failed (" + reason +
                    "); its ranks must leave before the key is reused") != std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace ohio::testing
