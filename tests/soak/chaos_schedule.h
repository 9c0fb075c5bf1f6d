// When the soak's chaos strikes and with what: a pure function of the seed, so a failing run
// can be replayed. The first three faults are one of each kind (in an order the seed picks),
// so even a short run injects every kind; the rest are drawn by weight.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

namespace ohio::soak {

enum class FaultKind {
  kKillRank,       // SIGKILL one rank of a job in the middle of its calls
  kRestartDaemon,  // SIGKILL one node's ohiod and start it again as the same node
  kGarbage,        // junk to every port of every daemon: control, admin, peer gRPC, TCP data
};

const char* FaultName(FaultKind kind);

struct Fault {
  std::chrono::milliseconds at;  // since the chaos began
  FaultKind kind;
  uint64_t pick;  // chooses the victim among those there are when the fault strikes
};

// Faults in [0, window), one every `mean_gap` on average (each gap uniform in [gap/2, 3gap/2]).
std::vector<Fault> PlanChaos(uint64_t seed, std::chrono::milliseconds window, std::chrono::milliseconds mean_gap);

}  // namespace ohio::soak
