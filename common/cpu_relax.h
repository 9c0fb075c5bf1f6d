// One pause between two checks of a condition another core will change: it tells the CPU that
// this is a spin loop, so the sibling hyperthread gets the core's resources and leaving the loop
// does not pay a memory-order mis-speculation. Every busy wait of ohio's, in the ranks and in
// the daemon, uses it.
#pragma once

namespace ohio {

inline void CpuRelax() { __builtin_ia32_pause(); }

}  // namespace ohio
