// Whether a waiter may spin before it sleeps, decided from what its node really has: the CPUs the
// node counts as its own (ohiod's `cpus` setting; by default what the host offers,
// common/host_cpus.h) against the node's processes that want one while a call is under way (ohiod's
// engine counts its groups' local ranks and itself; a rank counts its group's ranks on the node).
// Pure, so that ohiod and libohio decide alike.
//
// - a core to spare (wanting <= cpus): spin without yielding; a landing block or an arrival is
//   taken at once and nobody else wanted the core.
// - a core or more, but shared by more of this node's processes: spin, yielding between passes. The
//   processes competing for the core are this node's ranks, the very ones the waiter waits for, so
//   handing them the core is what it wants anyway (docs/PERFORMANCE.md, "Spinning on an
//   oversubscribed node").
// - less than one core for the whole node (nodes emulated on one host, a tight cgroup quota): sleep
//   at once. The cores are shared with other nodes' processes, which the round waits for too; a
//   spinner, yielding or not, takes their turns, and sixteen of them on two cores made calls 11-16x
//   slower than sleeping ("Many emulated nodes on two cores").
#pragma once

#include <cstdint>

namespace ohio {

enum class SpinMode { kSleep, kYield, kOwnCore };

inline SpinMode ChooseSpinMode(double cpus, uint32_t wanting) {
  if (cpus < 1) return SpinMode::kSleep;
  return wanting <= cpus ? SpinMode::kOwnCore : SpinMode::kYield;
}

inline const char* SpinModeName(SpinMode m) {
  switch (m) {
    case SpinMode::kSleep:
      return "never spins (less than one CPU for the node)";
    case SpinMode::kYield:
      return "spins yielding (more processes than CPUs)";
    case SpinMode::kOwnCore:
      return "spins (a CPU to spare)";
  }
  return "?";
}

}  // namespace ohio
