// A test job: `size` real rank processes (the alltoall_rank tool, or another rank tool of
// tests/tools/ that takes the same placement flags) of one group on one daemon.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/harness/process.h"

namespace ohio::testing {

class RankJob {
 public:
  static constexpr const char* kAlltoallRank = "tests/tools/alltoall_rank";

  // Every rank gets --socket, --key, --size, --rank and `common`; `extra(r)` adds more.
  RankJob(const TempDir& dir, const std::string& socket, const std::string& name, uint32_t size,
          const std::vector<std::string>& common,
          const std::function<std::vector<std::string>(uint32_t)>& extra = nullptr,
          const std::string& tool = kAlltoallRank);
  // A job across nodes: rank r talks to sockets[rank_node[r]] and joins with the node names
  // and placement given. With run_as_uid, every rank runs as that uid (and gid), from a copy
  // of the rank tool in `dir` (see RankToolAnyoneCanRun).
  RankJob(const TempDir& dir, const std::vector<std::string>& sockets, const std::vector<std::string>& node_names,
          const std::vector<uint32_t>& rank_node, const std::string& name, const std::vector<std::string>& common,
          const std::function<std::vector<std::string>(uint32_t)>& extra = nullptr,
          std::optional<uid_t> run_as_uid = std::nullopt, const std::string& tool = kAlltoallRank);

  Process& rank(uint32_t r) { return *ranks_[r]; }
  uint32_t size() const { return static_cast<uint32_t>(ranks_.size()); }
  // Waits for every rank; returns their exit codes (-1 for one killed at the deadline).
  std::vector<int> Wait(std::chrono::milliseconds deadline);
  // Every rank's output, for failure messages.
  std::string Outputs() const;

 private:
  std::vector<std::unique_ptr<Process>> ranks_;
};

// Whether a rank's output says its group (key_hex) failed for `why`: at a call
// ("code=7 (group failed) WHY; the group is closed"), or at its join when its node had failed
// the group already; worded by the node that found the cause, or as another of `nodes` told it
// ("group K has failed on node X: WHY"), since either may find it first.
bool ToldGroupFailed(const std::string& output, const std::string& key_hex, const std::string& why,
                     const std::vector<std::string>& nodes);

// The rank tool copied into `dir` (once), where another uid may run it: Bazel's output tree
// is root's only.
std::string RankToolAnyoneCanRun(const TempDir& dir);
// The same for any binary of the build, by its runfile path (e.g. "tests/tools/control_flood").
std::string ToolAnyoneCanRun(const TempDir& dir, const std::string& runfile);

}  // namespace ohio::testing
