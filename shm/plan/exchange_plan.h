// The inter-node half of an alltoall, as pure functions: the pairwise schedule, where every
// block (or chunk of one) lands in the receiving node's SRB ("deliveries"), what each node
// posts to the wire ("puts"), and how a rank copies a delivery out. The daemon, the client
// library and ohio-plan all compute the same plan from the same inputs, so nothing of it
// travels over the wire but a delivery index.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "shm/plan/node_level_design.h"
#include "shm/plan/copy_plan.h"
#include "shm/plan/group_shape.h"
#include "shm/plan/staging.h"

namespace ohio {

struct Step {
  uint32_t send_to = 0;
  uint32_t recv_from = 0;
};

// Steps 1..N-1 for `node`: partner n XOR s when N is a power of two, else send to n+s and
// receive from n-s (mod N). Each step pairs a send with the matching peer's receive.
std::vector<Step> PairwiseSchedule(uint32_t nodes, uint32_t node);
// Step s (1..N-1) of that schedule alone.
Step PairwiseStep(uint32_t nodes, uint32_t node, uint32_t s);

// v3's SRB is two halves; a half is rounded down to a cache line.
uint64_t SrbHalfBytes(uint64_t srb_bytes);

// Smallest SRB a group can work with: v1/v2 hold one byte of every remote message of the node
// receiving the most; v3 needs two halves of at least a cache line.
uint64_t MinSrbBytes(const GroupShape& shape, NodeLevelDesign algo);

// Staging for a group of any number of nodes: the SSB bounds every algorithm's slice (a group on
// one node: half of it); the SRB also bounds v1's and v2's, which keep every remote block of a
// round at once. Rounds carry a slice of every message while that slice is at least
// min_slice bytes (or all of M); below that, each round carries fewer rows (source ranks) or
// reaches fewer nodes (steps), so that a copy moves a whole message or a slice of at least
// min_slice: of the cuts that do, the fewest rounds. An SSB too small for max PPN slices of
// min_slice gets the longest slice it fits. Every node and rank computes the same staging from
// the same inputs: min_slice must be the group's (segment_layout.h: plan_min_slice_bytes).
Result<Staging> PlanGroupStaging(const GroupShape& shape, NodeLevelDesign algo, uint64_t ssb_bytes, uint64_t srb_bytes,
                                 uint64_t bytes_per_rank, uint64_t min_slice);

// The SSB v3 plans with: at most kMaxDeliveries/4 SRB halves, so that a round's delivery
// indexes fit the immediate, and never below one byte per message.
uint64_t V3SsbCap(const GroupShape& shape, uint64_t ssb_bytes, uint64_t srb_bytes);

// One transfer landing in node n's SRB during a round whose slice length is `slice`. The
// source's block for n is laid [source local rank][n's local rank] x slice; a delivery holds
// bytes [block_offset, block_offset + bytes) of it, at srb_offset.
struct Delivery {
  uint32_t source = 0;
  uint32_t step = 0;  // 0-based index into the schedule
  uint64_t block_offset = 0;
  uint64_t bytes = 0;
  uint64_t srb_offset = 0;
};
// The deliveries of a round covering `cover`: from every node it reaches n from, in
// PairwiseSchedule's order when it covers every step, else in step order (step = t - 1).
// The source's block for n is then [source row - first_row][n's local rank] x length.
std::vector<Delivery> PlanDeliveries(const GroupShape& shape, NodeLevelDesign algo, uint32_t node, const RoundCover& cover,
                                     uint64_t srb_bytes);
inline std::vector<Delivery> PlanDeliveries(const GroupShape& shape, NodeLevelDesign algo, uint32_t node, uint64_t slice,
                                            uint64_t srb_bytes) {
  return PlanDeliveries(shape, algo, node, WholeCover(slice), srb_bytes);
}

// A piece of the sender's SSB that a put gathers.
struct SsbPiece {
  uint64_t ssb_offset = 0;
  uint64_t bytes = 0;
};

// One transfer node n posts: the pieces of its own SSB, one after another, to srb_offset in
// dest's SRB, making up dest's delivery `delivery`. v2 and v3 stage each block contiguously
// (one piece); v1 reads the ranks' send buffers in place, so its block is a gather of one
// piece per local rank and run of dest's ranks, landing contiguously at the receiver.
struct Put {
  uint32_t dest = 0;
  uint32_t step = 0;
  uint32_t delivery = 0;
  std::vector<SsbPiece> pieces;
  uint64_t bytes = 0;  // sum of the pieces
  uint64_t srb_offset = 0;
};
std::vector<Put> PlanPuts(const GroupShape& shape, NodeLevelDesign algo, uint32_t node, const RoundCover& cover,
                          uint64_t srb_bytes);
inline std::vector<Put> PlanPuts(const GroupShape& shape, NodeLevelDesign algo, uint32_t node, uint64_t slice,
                                 uint64_t srb_bytes) {
  return PlanPuts(shape, algo, node, WholeCover(slice), srb_bytes);
}

// Copy-out by local rank r of `node` of one delivery: src is an offset into the SRB, dst into
// the rank's receive buffer (P messages of staging.bytes_per_rank).
std::vector<CopySpan> PlanCopyOutDelivery(const GroupShape& shape, uint32_t node, uint32_t r,
                                          const Staging& staging, uint64_t round, const Delivery& d);

// The 32-bit immediate of a put: the receiver's tag for the group and the delivery index.
constexpr uint32_t kImmTagBits = 10;
constexpr uint32_t kMaxGroupTags = 1u << kImmTagBits;
constexpr uint32_t kMaxDeliveries = 1u << (32 - kImmTagBits);
inline uint32_t EncodeImm(uint32_t tag, uint32_t delivery) { return tag << (32 - kImmTagBits) | delivery; }
inline uint32_t ImmTag(uint32_t imm) { return imm >> (32 - kImmTagBits); }
inline uint32_t ImmDelivery(uint32_t imm) { return imm & (kMaxDeliveries - 1); }
// Deliveries of rounds that announce themselves (ROUND_READY) are numbered below this; the
// delivery field's top bit marks an eager round's put (eager_plan.h).
constexpr uint32_t kMaxRendezvousDeliveries = kMaxDeliveries / 2;

}  // namespace ohio
