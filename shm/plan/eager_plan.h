// Eager rounds: a round small enough that every node's part of it fits one half of every
// receiver's SRB goes out as soon as the sending node's ranks have arrived, with no round
// announcement first. Pure functions shared by the daemon, the ranks and ohio-plan.
//
// Each SRB half (one per round parity) is cut into N-1 equal slots, one per source node (each a
// header line on top of its share of srb_bytes: shm/segment_layout.h's SrbHeaderRoomBytes), so
// where a put lands depends only on who sent it and the round's parity, never on M: a node
// whose ranks passed another M still lands in its own slot, and the receiver reads the M from
// the put's header instead of trusting its own. A put is that 64-byte header (round, M, flags)
// followed by the block, written by one transfer: the header rides with the data.
//
// Receiving a peer's round k is the credit for sending it round k+1: the peer sent k only
// once its ranks had arrived at k, i.e. had copied round k-1 out of the half k+1 reuses.
#pragma once

#include <cstdint>
#include <vector>

#include "shm/plan/node_level_design.h"
#include "shm/plan/exchange_plan.h"
#include "shm/plan/group_shape.h"
#include "shm/tables/internode_choice.h"

namespace ohio {

constexpr uint64_t kEagerHeaderBytes = 64;
constexpr uint32_t kEagerHeaderMagic = 0x4f484552;  // "OHER"

// What a put of an eager round carries in front of its block (little-endian on the wire is the
// host order of every x86-64 and arm64 node: the header is written and read in place).
struct alignas(64) EagerHeader {
  uint32_t magic;
  uint32_t round;
  uint64_t bytes_per_rank;
  uint32_t flags;  // kEagerOptedOut, kEagerVectorStaged, kEagerVectorTables; shm/plan/vector_cube.h's
  uint32_t source_node;
  // When the source node began the round (CLOCK_MONOTONIC there): only for the stage report's
  // trip time, which means something only where nodes share a clock.
  uint64_t begun_ns;
  // Alltoallv: the source node's share of the group's count digest (shm/plan/vector_plan.h).
  uint64_t count_digest;
  // Alltoallv, the call's first round: the stream rounds the source node's part needs
  // (shm/plan/vector_staging.h).
  uint32_t stream_rounds;
  uint32_t unused_word;
  // Alltoallv run as a hypercube among a number of nodes that is not a power of two: the sum of
  // the count digest's shares of a window of nodes behind the sender (shm/plan/vector_cube.h).
  uint64_t count_digest_tail;
  uint8_t unused[8];
};
static_assert(sizeof(EagerHeader) == kEagerHeaderBytes, "one cache line");
constexpr uint32_t kEagerOptedOut = 1;
// Alltoallv: the source node's part of the call does not fit one round; the call goes in
// stream rounds on every node.
constexpr uint32_t kEagerVectorStaged = 2;
// Alltoallv, a round whose count digest failed: past this header (the same as the round's
// first), the source node's count tables instead of its block (shm/plan/vector_disagreement.h).
constexpr uint32_t kEagerVectorTables = 4;

struct EagerLayout {
  uint64_t ssb_half = 0;  // SSB bytes a round may use (rounds alternate halves)
  uint64_t srb_half = 0;  // SRB bytes a round's slots take (N-1 slots; rounds alternate halves)
  uint64_t slot = 0;      // SRB bytes per source node in a half: header + block
};
EagerLayout PlanEagerLayout(const GroupShape& shape, uint64_t ssb_bytes, uint64_t srb_bytes);

// Whether a call of M bytes per rank is one eager round on every node: the same answer on every
// node for the same M (it depends only on the group and the smallest buffers of its nodes).
bool FitsEager(const GroupShape& shape, const EagerLayout& layout, uint64_t bytes_per_rank);

// Where in `receiver`'s SRB the put from `source` for a round of `parity` starts (its header).
uint64_t EagerSlotOffset(const EagerLayout& layout, uint32_t receiver, uint32_t source, uint32_t parity);

// This node's puts of an eager round of parity 0, one per other node in schedule order: pieces
// of the SSB half (offsets from the half's start), srb_offset where the put (header first)
// lands at the peer. For parity 1 add layout.ssb_half to the pieces and layout.srb_half to
// srb_offset.
std::vector<Put> PlanEagerPuts(const GroupShape& shape, NodeLevelDesign algo, uint32_t node, const EagerLayout& layout,
                               uint64_t bytes_per_rank);

// The deliveries an eager round of parity 0 brings to `node`, one per other node in schedule
// order, srb_offset at the block (past the header). For parity 1 add layout.srb_half.
std::vector<Delivery> PlanEagerDeliveries(const GroupShape& shape, uint32_t node, const EagerLayout& layout,
                                          uint64_t bytes_per_rank);

// The immediate's delivery field of an eager put: its bit, and the round's parity. Deliveries
// of rounds that announce themselves first stay below kEagerImmBit.
constexpr uint32_t kEagerImmBit = kMaxRendezvousDeliveries;
inline uint32_t EagerImmDelivery(uint32_t parity) { return kEagerImmBit | (parity & 1); }
inline bool IsEagerImm(uint32_t delivery) { return (delivery & kEagerImmBit) != 0; }
// An eager round run as a hypercube (shm/plan/bruck_plan.h): which inbox the message fills follows
// from who sent it.
inline uint32_t BruckImmDelivery(uint32_t parity) { return kEagerImmBit | 2 | (parity & 1); }
inline bool IsBruckImm(uint32_t delivery) { return IsEagerImm(delivery) && (delivery & 2) != 0; }
// A node's alltoallv count tables put into its eager slot after a failed digest (so every node
// can name the pair that disagrees): handled as any eager put, but not the ranks' data, so the
// payload counters leave it out.
inline uint32_t VectorTablesImmDelivery(uint32_t parity) { return kEagerImmBit | 4 | (parity & 1); }
inline bool IsVectorTablesImm(uint32_t delivery) { return IsEagerImm(delivery) && (delivery & 4) != 0; }
// A hypercube round's message of an alltoallv (shm/plan/vector_cube.h): its header line is followed
// by a table of its blocks' sizes, which is not the ranks' data either.
inline uint32_t VectorCubeImmDelivery(uint32_t parity) { return BruckImmDelivery(parity) | 8; }
inline bool IsVectorCubeImm(uint32_t delivery) { return IsBruckImm(delivery) && (delivery & 8) != 0; }

// The inter-node algorithm a round of M bytes per rank runs (`eager`: it is one eager round): the
// table's choice, except that the hypercube runs only as an eager round that fits it, with the
// SSB laid per node (v2/v3), and pairwise otherwise. The same answer on every node of the
// group for the same M.
InterNodeAlgorithm RoundInterNodeAlgorithm(const GroupShape& shape, NodeLevelDesign algo, const EagerLayout& layout, const InterNodeTable& table,
                   uint64_t bytes_per_rank, bool eager);

// Why a round runs pairwise where the table chose the hypercube (the only choice ever replaced).
enum class HypercubeMiss {
  kNone,        // the table's choice runs
  kNotEager,    // the round is not one eager round (announced, staged or chunked)
  kV1Layout,    // v1's SSB keeps each rank's row as it is, not a block per node
  kInboxTooSmall,  // a step's message does not fit its inbox of the SRB half, or a row its SSB share
};
struct RoundInterNodeChoice {
  InterNodeAlgorithm table = InterNodeAlgorithm::kPairwise;  // what the table chose (ChooseInterNodeAlgorithm)
  InterNodeAlgorithm runs = InterNodeAlgorithm::kPairwise;   // what the round runs (RoundInterNodeAlgorithm)
  HypercubeMiss miss = HypercubeMiss::kNone;
};
// RoundInterNodeAlgorithm with its reason: what `ohio-plan --explain` says runs, from the same decision.
RoundInterNodeChoice ExplainRoundInterNodeAlgorithm(const GroupShape& shape, NodeLevelDesign algo, const EagerLayout& layout,
                                     const InterNodeTable& table, uint64_t bytes_per_rank, bool eager);

// SegmentHeader::eager_internode: the round and its inter-node algorithm in one word, so that a word left from
// the round before reads as pairwise.
inline uint64_t EagerInterNodeWord(uint32_t round, InterNodeAlgorithm internode) {
  return uint64_t{round} << 32 | static_cast<uint32_t>(internode);
}
inline InterNodeAlgorithm EagerInterNodeOf(uint64_t word, uint32_t round) {
  return (word >> 32) == round ? static_cast<InterNodeAlgorithm>(static_cast<uint32_t>(word)) : InterNodeAlgorithm::kPairwise;
}

// The deliveries an eager round of parity 0 run by `internode` brings to `node`, in the order they
// are published (for parity 1 add layout.srb_half).
std::vector<Delivery> PlanEagerRoundDeliveries(const GroupShape& shape, uint32_t node, const EagerLayout& layout,
                                               uint64_t bytes_per_rank, InterNodeAlgorithm internode);

}  // namespace ohio
