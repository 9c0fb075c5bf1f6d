// Whether a waiter may spin before it sleeps, decided from what its node really has: the CPUs the
// node counts as its own (ohiod's `cpus` setting; by default what the host offers,
// common/host_cpus.h) against the node's processes that want one while a call is under way: its
// ranks (ohiod's engine counts its open groups' local ranks, a rank its group's) plus the engine.
// Pure, so that ohiod and libohio decide alike.
//
// - a core to spare (wanting <= cpus): spin without yielding; a landing block or an arrival is
//   taken at once and nobody else wanted the core.
// - more processes than CPUs, up to kMostWantingPerCpu per CPU: spin, yielding between passes.
//   A yield hands the core to one of a few others, often the very rank or daemon the waiter
//   waits for, and small calls took well under flat's time where sleeping matched it
//   (docs/investigations/spinning-on-oversubscribed-nodes.md has the figures).
// - more than that (many nodes emulated on one host, a tight cgroup quota): sleep at once. A yield
//   then hands the core to any of dozens of processes, mostly other spinners, and spinning with
//   yields was slower than sleeping (the same investigation).
#pragma once

#include <algorithm>
#include <cstdint>

namespace ohio {

enum class SpinMode { kSleep, kYield, kOwnCore };

constexpr double kMostWantingPerCpu = 8;

inline SpinMode ChooseSpinMode(double cpus, uint32_t wanting) {
  if (wanting <= cpus) return SpinMode::kOwnCore;
  return wanting > kMostWantingPerCpu * cpus ? SpinMode::kSleep : SpinMode::kYield;
}

// How ohiod's engine polls when a pass found nothing to do: for how long since its last work
// before it sleeps, and whether it yields the core between polls.
struct EnginePoll {
  int64_t budget_us = 0;
  bool yield = true;
};

// `mid_round`: a round spanning nodes is under way; `ranks_may_wait`: some group's ranks may be
// waiting for the engine in a blocking call (not only nonblocking calls to move, while the ranks
// compute). With a core to spare the engine polls without yielding, round_spin_us mid-round and
// spin_us otherwise. Oversubscribed it polls spin_us, yielding, only while ranks may wait for
// it: with nonblocking calls alone, a rank's start rings the doorbell and a landing block wakes
// epoll only when the engine sleeps, and an engine that yielded is runnable, not asleep: nothing
// wakes it, and it runs again only once the computing rank it yielded to has used its whole
// time slice, so a call could sit unmoved through the whole computation. Asleep, the wake-up
// preempts the rank and the call moves at once, and MPI_Wait after the computation finds it
// done (docs/investigations/ialltoall-overlap.md has the figures).
inline EnginePoll ChooseEnginePoll(SpinMode mode, bool mid_round, bool ranks_may_wait, int64_t spin_us,
                                   int64_t round_spin_us) {
  EnginePoll p;
  if (mode == SpinMode::kSleep) return p;
  if (mode == SpinMode::kOwnCore) {
    p.yield = false;
    p.budget_us = mid_round ? round_spin_us : spin_us;
    return p;
  }
  if (ranks_may_wait) p.budget_us = spin_us;
  return p;
}

// How long a rank's wait spins before it sleeps (client/libohio/round_waiter.h), from its typical
// call time: twice that, within [min_us, max_us], so that the waits of short calls are caught
// spinning and a wake-up's delay is not added to each. min_us 0 never spins.
//
// A rank of a group spanning nodes, on a node with more processes than CPUs
// (`oversubscribed_across_nodes`), whose calls take longer than half of max_us does not spin at
// all. Its waits are for the network and the daemons, long, a wake-up is a small share of them,
// and every microsecond it spins (yielding between checks) is CPU the node's other ranks and
// its daemon need for the call's copies and network: sleeping at once cut the CPU and the
// context switches per call of medium and large calls with the latency unchanged. Short calls
// keep their spin, which beat flat where sleeping did not. A group on one node keeps its spin
// whatever its calls' length: its ranks wait for each other, not for a network, and sleeping
// at once made its large calls slower (docs/investigations/medium-messages-across-nodes.md
// has the figures of all three).
inline int64_t RankSpinUs(int64_t typical_call_ns, int64_t min_us, int64_t max_us, bool oversubscribed_across_nodes) {
  if (min_us <= 0) return 0;
  const int64_t twice_typical_us = typical_call_ns / 500;
  if (oversubscribed_across_nodes && twice_typical_us > max_us) return 0;
  return std::clamp(twice_typical_us, min_us, max_us);
}

inline const char* SpinModeName(SpinMode m) {
  switch (m) {
    case SpinMode::kSleep:
      return "never spins (more than 8 processes per CPU)";
    case SpinMode::kYield:
      return "spins yielding (more processes than CPUs)";
    case SpinMode::kOwnCore:
      return "spins (a CPU to spare)";
  }
  return "?";
}

}  // namespace ohio
