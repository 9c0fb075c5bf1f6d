// One job of the soak: a fixed set of ranks (one uid, a placement over the cluster's nodes)
// that runs its calls in successive runs, each a new group of real rank processes doing
// verified alltoalls of random sizes. A run ended by a fault is judged (every rank's error
// must name an expected cause) and the job goes on with a new group until it has its calls.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/rank_job.h"
#include "tests/soak/soak_figures.h"

namespace ohio::soak {

struct JobSpec {
  std::string name;
  std::optional<uid_t> uid;        // unset: root, the soak's own uid
  std::vector<uint32_t> rank_node;  // cluster node of each rank
  uint64_t max_bytes = 0;          // bytes per rank of a call, at most
  uint32_t calls_per_run = 0;
};

class SoakJob {
 public:
  SoakJob(JobSpec spec, testing::Cluster& cluster, const testing::TempDir& dir, uint64_t seed, uint64_t calls);

  // Judges a run that has ended and (if `launch`) starts the next while calls remain; a run
  // still going after `run_deadline` is a hang: it is killed and reported.
  void Step(std::chrono::milliseconds run_deadline, bool launch, Figures* f);
  bool done() const { return !run_ && verified_ >= calls_; }
  bool running() const { return run_ != nullptr; }
  bool Spans(uint32_t node) const;
  const JobSpec& spec() const { return spec_; }
  uint64_t verified() const { return verified_; }
  uint32_t runs_judged() const { return judged_; }
  // SIGKILLs one rank (chosen by `pick`) of the run under way; "" if there is no run or it
  // already lost a rank (its other ranks are to report that one).
  std::string KillRank(uint64_t pick);
  // `node`'s daemon is stopped now: the run under way, if it spans the node, met a stop.
  void NoteStopped(uint32_t node);

 private:
  void Launch();
  void Judge(const std::vector<int>& codes, Figures* f);

  JobSpec spec_;
  testing::Cluster& cluster_;
  const testing::TempDir& dir_;
  uint64_t seed_;
  uint64_t calls_;
  uint64_t verified_ = 0;
  uint32_t generation_ = 0;
  uint32_t run_calls_ = 0;
  uint32_t judged_ = 0;
  std::unique_ptr<testing::RankJob> run_;
  std::chrono::steady_clock::time_point run_started_;
  std::set<uint32_t> killed_;
  bool met_stop_ = false;
  std::chrono::steady_clock::time_point killed_at_;
};

}  // namespace ohio::soak
