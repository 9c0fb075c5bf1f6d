// When the soak's chaos strikes and with what: a pure function of the seed, so a failing run
// can be replayed. The first five faults are one of each kind (in an order the seed picks),
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
  kStopDaemon,     // SIGSTOP one node's ohiod for about the group timeout (StopLength), then SIGCONT
  kHostileUid,     // an unprivileged uid attacks one daemon: unfinished control frames, large nonblocking calls
};

const char* FaultName(FaultKind kind);

struct Fault {
  std::chrono::milliseconds at;  // since the chaos began
  FaultKind kind;
  uint64_t pick;  // chooses the victim among those there are when the fault strikes
};

// Faults in [0, window), one every `mean_gap` on average (each gap uniform in [gap/2, 3gap/2]).
// How long a kStopDaemon fault holds its daemon: uniform in [0.7, 1.3] x the group timeout,
// drawn from the fault's pick, so that some stops end before the ranks' waits give up and some
// after.
std::chrono::milliseconds StopLength(uint64_t pick, std::chrono::milliseconds group_timeout);

std::vector<Fault> PlanChaos(uint64_t seed, std::chrono::milliseconds window, std::chrono::milliseconds mean_gap);

}  // namespace ohio::soak
