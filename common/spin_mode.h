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
//   waits for (docs/PERFORMANCE.md, "Spinning on an oversubscribed node"; 4 nodes x 2 ranks on
//   2 cores, 6 per CPU: 0.44-0.59 of flat's time at most small sizes, against about 1.0 asleep).
// - more than that (many nodes emulated on one host, a tight cgroup quota): sleep at once. A yield
//   then hands the core to any of dozens of processes, mostly other spinners: 16 nodes x 1 rank
//   on 2 cores, 16 per CPU, took 2.5-7x flat's time spinning with yields and 1.5-2.9x asleep
//   ("16 and 32 emulated nodes with the spin chosen from the CPUs").
#pragma once

#include <cstdint>

namespace ohio {

enum class SpinMode { kSleep, kYield, kOwnCore };

constexpr double kMostWantingPerCpu = 8;

inline SpinMode ChooseSpinMode(double cpus, uint32_t wanting) {
  if (wanting <= cpus) return SpinMode::kOwnCore;
  return wanting > kMostWantingPerCpu * cpus ? SpinMode::kSleep : SpinMode::kYield;
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
