#include "tests/soak/chaos_schedule.h"

#include <algorithm>
#include <random>

namespace ohio::soak {

const char* FaultName(FaultKind kind) {
  switch (kind) {
    case FaultKind::kKillRank: return "rank killed";
    case FaultKind::kRestartDaemon: return "daemon restarted";
    case FaultKind::kGarbage: return "garbage to every port";
  }
  return "?";
}

std::vector<Fault> PlanChaos(uint64_t seed, std::chrono::milliseconds window, std::chrono::milliseconds mean_gap) {
  std::mt19937_64 rng(seed);
  std::vector<FaultKind> first = {FaultKind::kKillRank, FaultKind::kRestartDaemon, FaultKind::kGarbage};
  std::shuffle(first.begin(), first.end(), rng);
  // A restart fails every job through that node and costs a reconnection: rarer than the rest.
  std::discrete_distribution<int> weighted({45, 20, 35});
  std::uniform_int_distribution<int64_t> gap(mean_gap.count() / 2, mean_gap.count() * 3 / 2);
  std::vector<Fault> faults;
  for (std::chrono::milliseconds at(gap(rng)); at < window; at += std::chrono::milliseconds(gap(rng))) {
    const FaultKind kind =
        faults.size() < first.size() ? first[faults.size()] : static_cast<FaultKind>(weighted(rng));
    faults.push_back(Fault{at, kind, rng()});
  }
  return faults;
}

}  // namespace ohio::soak
