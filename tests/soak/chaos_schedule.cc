#include "tests/soak/chaos_schedule.h"

#include <algorithm>
#include <random>

namespace ohio::soak {

const char* FaultName(FaultKind kind) {
  switch (kind) {
    case FaultKind::kKillRank: return "rank killed";
    case FaultKind::kRestartDaemon: return "daemon restarted";
    case FaultKind::kGarbage: return "garbage to every port";
    case FaultKind::kStopDaemon: return "daemon stopped";
    case FaultKind::kHostileUid: return "hostile uid's attack";
  }
  return "?";
}

std::chrono::milliseconds StopLength(uint64_t pick, std::chrono::milliseconds group_timeout) {
  // The pick's high bits: its low ones choose the node.
  const double fraction = static_cast<double>(pick >> 11) / static_cast<double>(uint64_t{1} << 53);
  return std::chrono::milliseconds(static_cast<int64_t>(group_timeout.count() * (0.7 + 0.6 * fraction)));
}

std::vector<Fault> PlanChaos(uint64_t seed, std::chrono::milliseconds window, std::chrono::milliseconds mean_gap) {
  std::mt19937_64 rng(seed);
  std::vector<FaultKind> first = {FaultKind::kKillRank, FaultKind::kRestartDaemon, FaultKind::kGarbage,
                                  FaultKind::kStopDaemon, FaultKind::kHostileUid};
  std::shuffle(first.begin(), first.end(), rng);
  // A restart fails every job through that node and costs a reconnection: rarer than the rest.
  // A stop holds a node for about the group timeout (and the soak lets one node be stopped at a
  // time): the rarest.
  std::discrete_distribution<int> weighted({40, 15, 30, 5, 10});
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
