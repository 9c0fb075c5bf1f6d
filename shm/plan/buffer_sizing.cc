#include "shm/plan/buffer_sizing.h"

#include <algorithm>

#include "shm/plan/bruck_plan.h"
#include "shm/plan/eager_plan.h"
#include "shm/plan/exchange_plan.h"
#include "shm/plan/staging.h"

namespace ohio {
namespace {

constexpr uint64_t kLine = 64;
// Buffers start on pages (shm/segment_layout.h) and are whole pages, so they register alone.
constexpr uint64_t kPageBytes = 4096;

uint64_t RoundUp(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

uint64_t Clamp(uint64_t v, uint64_t lo, uint64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

// count * each, or `cap` when that would exceed it (hints come from clients: any value).
uint64_t ProductUpTo(uint64_t count, uint64_t each, uint64_t cap) {
  if (count != 0 && each > cap / count) return cap;
  return count * each;
}

}  // namespace

BufferSizes SizeBuffers(const GroupShape& shape, NodeLevelDesign algo, uint64_t hint, uint64_t configured_ssb,
                        uint64_t configured_srb, uint64_t hypercube_bytes) {
  const bool spans_nodes = shape.nodes() > 1;
  BufferSizes configured{configured_ssb, spans_nodes ? configured_srb : 0};
  if (hint == 0) return configured;
  const uint64_t max_ppn = shape.max_ppn();
  // Both kinds of group stage a round in one SSB half per parity: the node with the most
  // ranks holds max_ppn rows of size messages (shm/plan/staging.h, eager_plan.h).
  const uint64_t half = ProductUpTo(max_ppn * shape.size(), hint, configured_ssb);
  BufferSizes s;
  s.ssb = Clamp(RoundUp(2 * RoundUp(half, kLine), kPageBytes),
                spans_nodes ? MinSsbBytes(shape) : MinLocalSsbBytes(shape), configured_ssb);
  if (spans_nodes) {
    // An eager round gives every source node a slot per SRB half: a header, then the block of
    // max_ppn x max_ppn messages.
    const uint64_t block = ProductUpTo(max_ppn * max_ppn, hint, configured_srb);
    const uint64_t slot = RoundUp(kEagerHeaderBytes + block, kLine);
    uint64_t halves = ProductUpTo(2 * uint64_t{shape.nodes() - 1}, slot, configured_srb);
    // The hypercube's inboxes share a half among ceil(log2 N) messages that carry up to half
    // of the blocks each: at 32 nodes and 1 rank each, 5 x 16 blocks against pairwise's 31.
    const uint64_t area = BruckAreaBytes(shape, std::min(hypercube_bytes, hint));
    halves = std::max(halves, area > configured_srb / 2 ? configured_srb : 2 * area);
    s.srb = Clamp(RoundUp(halves, kPageBytes), MinSrbBytes(shape, algo), configured_srb);
  }
  return s;
}

uint64_t HintClassFor(uint64_t bytes_per_rank) {
  if (bytes_per_rank <= kSmallCallBytes) return kSmallCallBytes;
  if (bytes_per_rank <= kMediumCallBytes) return kMediumCallBytes;
  return 0;
}

}  // namespace ohio
