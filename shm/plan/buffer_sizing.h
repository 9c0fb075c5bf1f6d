// How large a group's SSB and SRB are. Without a hint they are what the daemon is configured
// with: the most any call can use. A group joined with a hint (the largest bytes per rank its
// calls are expected to pass) gets buffers just large enough for such a call to be a single
// round, eager when the group spans nodes, so that a 2-rank job exchanging 64 bytes maps
// kilobytes instead of megabytes. A larger call still works, in more rounds; libohio then joins
// the group again with a larger hint (client/libohio/growing_group.h). Pure functions, shared by the
// daemon (sizing) and libohio (when to grow).
#pragma once

#include <cstdint>

#include "shm/plan/node_level_design.h"
#include "shm/plan/group_shape.h"

namespace ohio {

// ohiod's ssb-bytes and srb-bytes unless configured otherwise.
constexpr uint64_t kDefaultSsbBytes = 16u << 20;
constexpr uint64_t kDefaultSrbBytes = 8u << 20;

struct BufferSizes {
  uint64_t ssb = 0;
  uint64_t srb = 0;  // 0 for a group on one node
};

// hint 0: the configured sizes. Otherwise the smallest page multiples holding one round of a
// call of `hint` bytes per rank, at most the configured sizes and at least the group's
// minimum (MinSsbBytes / MinLocalSsbBytes, MinSrbBytes); whether that minimum fits the
// configuration is the caller's check. `hypercube_bytes` (at most the hint; 0: none): the
// largest M the group's inter-node table runs as a hypercube, whose inboxes an SRB half must then
// also hold (shm/plan/bruck_plan.h), or those calls would fall back to pairwise for want of room.
BufferSizes SizeBuffers(const GroupShape& shape, NodeLevelDesign algo, uint64_t hint, uint64_t configured_ssb,
                        uint64_t configured_srb, uint64_t hypercube_bytes = 0);

// Sizes between `floor` (the group's minimum) and `wanted`, halving from `wanted` until
// `fits` accepts them: what a hinted group gets when its hint's buffers do not fit the memory
// the daemon or the user has left (a hint asks for speed, not for correctness).
template <typename Fits>
BufferSizes ShrinkUntil(BufferSizes wanted, BufferSizes floor, Fits fits) {
  BufferSizes s = wanted;
  while (!fits(s) && (s.ssb > floor.ssb || s.srb > floor.srb)) {
    s.ssb = s.ssb / 2 > floor.ssb ? s.ssb / 2 : floor.ssb;
    s.srb = s.srb / 2 > floor.srb ? s.srb / 2 : floor.srb;
  }
  return s;
}

// The hint classes libohio joins with: calls up to 4 KiB per rank, then up to 64 KiB, then
// the configured sizes (hint 0). Few classes, so that a program whose sizes rise (a benchmark
// from 1 B to 1 MiB) joins again at most twice.
constexpr uint64_t kSmallCallBytes = 4096;
constexpr uint64_t kMediumCallBytes = 65536;
uint64_t HintClassFor(uint64_t bytes_per_rank);

// Whether a group joined with `hint` should be joined again, with HintClassFor(m), after a call
// of m bytes per rank that every rank agreed on: the same answer on every rank.
inline bool OutgrownBy(uint64_t hint, uint64_t m) { return hint != 0 && m > hint; }

}  // namespace ohio
