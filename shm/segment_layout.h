// The binary layout of a group's shared segment: header (control block), one slot per local
// rank (rank-written), one count table per local rank (alltoallv), the daemon's hypercube
// alltoallv lines, then the SSB and the SRB. The segment is a sealed memfd mapped by the
// daemon and by every local rank of the group, so everything in it is either written once
// before it is handed out or an address-free lock-free atomic.
//
// Rounds of a group on one node are driven by its ranks alone (client/libohio/on_node_alltoall.h): they meet
// in their slots and the daemon only watches. Rounds of a group spanning nodes go through the
// daemon, which publishes in the header what it did. While a rank of such a group has
// nonblocking calls started, the daemon writes that rank's round fields in its slot on its behalf
// (daemon/engine/nonblocking_across_nodes_alltoall.h); the rank touches them again only once they are complete.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "shm/handed_back.h"
#include "shm/latency_buckets.h"
#include "shm/round_stamps.h"

namespace ohio {

constexpr uint32_t kSegmentMagic = 0x4f48494f;  // "OHIO"
constexpr uint32_t kSegmentVersion = 13;
constexpr size_t kCacheLine = 64;
constexpr size_t kPage = 4096;
constexpr size_t kErrorMessageBytes = 512;

// Nonblocking calls a rank may have outstanding on one group.
constexpr uint32_t kNonblockingDepth = 8;

static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words must be plain atomics");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "slots must be plain atomics");

// Calls counted in the segment by a group's local rank 0 (single writer: plain relaxed
// stores). Latency classes and buckets are shm/latency_buckets.h's.
struct CallStats {
  std::atomic<uint64_t> calls;         // completed without error
  std::atomic<uint64_t> failed;        // returned an error (other than an opt-out)
  std::atomic<uint64_t> failed_by_code[16];  // the same by ohio::Code
  std::atomic<uint64_t> rounds;
  std::atomic<uint64_t> bytes_local;   // bytes moved between the node's ranks
  std::atomic<uint64_t> latency_count[kLatencySizeClasses][kLatencyBuckets];
  std::atomic<uint64_t> latency_sum_ns[kLatencySizeClasses];
  // Calls the ranks handed to the MPI library, by function and reason (shm/handed_back.h): on
  // one node and across nodes alike, each node's local rank 0 counting its node's.
  std::atomic<uint64_t> handed_back[kHandedBackFunctions][kHandBackReasons];
};

enum class GroupState : uint32_t {
  kOpen = 0,
  kFailed = 1,  // permanently: a rank died or left mid-way; every later call gets the error
};

// Rounds are numbered from 1 and compared modulo 2^32 (RoundReached), so wrapping after 2^32
// rounds is harmless. A call of R rounds (see staging.h) uses R consecutive round numbers.
struct alignas(kCacheLine) SegmentHeader {
  // Written by the daemon before the segment is handed out; read-only afterwards.
  uint32_t magic;
  uint32_t version;
  uint64_t segment_bytes;
  uint32_t group_size;
  uint32_t local_ranks;
  uint64_t slots_offset;
  uint64_t count_tables_offset;  // 2 (round parity) x local_ranks x CountTableBytes(group_size)
  uint64_t ssb_offset;
  uint64_t ssb_bytes;
  uint64_t srb_offset;
  uint64_t srb_bytes;
  uint32_t timeout_ms;
  uint32_t design;     // ohio::NodeLevelDesign
  // The buffer sizes every node of the group plans with (the smallest over its nodes): set
  // by the daemon before it publishes started = 1.
  uint64_t plan_ssb_bytes;
  uint64_t plan_srb_bytes;
  // The shortest slice of a message a staged round copies when it can (PlanGroupStaging's
  // min_slice): the same on every node, so set with the sizes above.
  uint64_t plan_min_slice_bytes;

  // Everyone who changes something another process may wait for (the daemon, or a rank
  // arriving) bumps event_count and, only if `sleepers` is non-zero, wakes its futex: a waiter
  // counts itself in `sleepers` before it re-checks its condition and sleeps (shm/segment_change.h).
  alignas(kCacheLine) std::atomic<uint32_t> event_count;
  std::atomic<uint32_t> sleepers;

  // Daemon -> ranks.
  alignas(kCacheLine) std::atomic<uint32_t> started;  // 1 once every node's daemon has met
  // Groups spanning nodes. This node is through with every round up to finished_round: its
  // puts have left and its ranks have copied out. A rank fills the SSB for round k once
  // finished_round >= k-1, or, when k and k-1 are both eager (they use the two SSB halves),
  // once finished_round >= k-2.
  std::atomic<uint32_t> finished_round;
  std::atomic<uint32_t> released_round;  // a round that announced itself may be copied out (or failed)
  std::atomic<uint32_t> failed_round;    // == released_round: that round failed, see round_error
  std::atomic<uint32_t> round_error_code;  // ohio::Code
  std::atomic<uint32_t> state;             // GroupState
  std::atomic<uint32_t> group_error_code;  // ohio::Code, once state is kFailed
  // Deliveries of released_round (exchange_plan.h) that have landed in the SRB, in order.
  std::atomic<uint32_t> delivered;
  // Eager rounds (eager_plan.h), by parity: round << 32 | deliveries of it landed, in order.
  std::atomic<uint64_t> eager_landed[2];
  // Eager rounds, by parity: round << 32 | the inter-node algorithm (shm/tables/internode_choice.h) the
  // round runs among nodes, which says where its blocks land. Written before the round's
  // first block is published.
  std::atomic<uint64_t> eager_internode[2];
  // Alltoallv across nodes, by parity: round << 32 | kVectorSomePartStreams if some node's part
  // of the call whose first round is `round` did not fit it | kVectorOwnPartStaged if this
  // node's did not | the stream rounds that follow that round (shm/plan/vector_staging.h); round << 32
  // | kVectorCallGoesAgain when the round carried nothing and the call starts over; round << 32
  // alone when the round is the whole call. Written before the round's blocks are published.
  std::atomic<uint64_t> vector_streamed[2];
  // Groups on one node: CLOCK_MONOTONIC when the daemon last looked in on the group (every
  // watch tick, 100 ms). A rank that finds it recent knows the daemon lives without asking the
  // kernel (client/libohio/group_handle.cc): one system call less per call.
  std::atomic<uint64_t> daemon_seen_ns;
  char round_error[kErrorMessageBytes];
  char group_error[kErrorMessageBytes];

  // Ranks -> daemon: set while the progress engine sleeps; a rank of a group spanning nodes
  // that finds it set after publishing writes the group's doorbell eventfd.
  alignas(kCacheLine) std::atomic<uint32_t> daemon_sleeping;
  // Set for good by a rank whose kernel refused to read another rank's memory, or by every
  // rank once they found themselves in different PID namespaces: from then on every rank of
  // the group stages its rows in the SSB (two copies).
  std::atomic<uint32_t> single_copy_refused;

  // Calls of a group on one node, counted by its local rank 0 (the daemon folds them into its
  // counters): latency is that rank's time in the call. Calls handed to the MPI library are
  // counted here by every node's local rank 0, whether the group spans nodes or not.
  alignas(kCacheLine) CallStats stats;

  // Daemon only: the header of this node's eager puts of a round, by parity (EagerHeader of
  // eager_plan.h). Inside the segment because puts gather it from registered memory.
  alignas(kCacheLine) uint8_t eager_out[2][64];

  // Daemon -> ranks: when the daemon took each step of a round spanning nodes, by parity.
  alignas(kCacheLine) RoundStamps stamps[2];

  // Daemon -> ranks: nonblocking calls (daemon/engine/nonblocking_alltoall.h on one node,
  // daemon/engine/nonblocking_across_nodes_alltoall.h across nodes).
  // Every call up to nonblocking_done is complete; call s's outcome is in entry s mod
  // kNonblockingDepth until call s + kNonblockingDepth completes.
  alignas(kCacheLine) std::atomic<uint32_t> nonblocking_done;
  std::atomic<uint32_t> nonblocking_code[kNonblockingDepth];  // ohio::Code
  char nonblocking_error[kNonblockingDepth][kErrorMessageBytes];
};

// bytes_per_rank of a rank that opts out of a call (ohio_alltoall_opt_out): the round then fails
// with Code::kOptedOut on every rank of every node, so that all of them can hand the call back together.
constexpr uint64_t kOptOutBytes = ~uint64_t{0};
// bytes_per_rank of a rank in an alltoallv round: its counts are in its count table.
constexpr uint64_t kVectorBytes = ~uint64_t{0} - 1;
// SegmentHeader::vector_streamed: this node streams its part; some node does.
constexpr uint64_t kVectorOwnPartStaged = uint64_t{1} << 31;
constexpr uint64_t kVectorSomePartStreams = uint64_t{1} << 30;
// SegmentHeader::vector_streamed: the round, an alltoallv's first run as a hypercube, carried
// nothing a rank reads (some node's part did not fit it, or the counts disagree): the call goes
// again from the next round, as a pairwise one (shm/plan/vector_cube.h).
constexpr uint64_t kVectorCallGoesAgain = uint64_t{1} << 29;

// What a rank sends to and expects from each rank in an alltoallv, written by it before it
// arrives and read by the others until they are done (client/libohio/on_node_alltoallv.cc), and, in a
// group spanning nodes, by its daemon when the round begins (shm/plan/vector_plan.h): bytes and
// displacement into its send buffer, and bytes it expects, per rank of the group. One table per
// rank and round parity: across nodes a rank may write round k's while others still read k-1's.
struct CountEntry {
  uint64_t bytes;
  uint64_t displacement;
  uint64_t recv_bytes;  // across nodes: where each piece of a peer's block lies, and the digest
};
inline uint64_t CountTableBytes(uint32_t group_size) { return uint64_t{group_size} * sizeof(CountEntry); }

// Why a rank's reads of an alltoallv round went wrong (RankSlot::vector_fault).
enum class VectorFault : uint32_t {
  kNone = 0,
  kSizeMismatch = 1,  // a sender's bytes differ from what this rank expects of it
  kUnreadable = 2,    // the sender's buffer at its displacement is not mapped
  kRefused = 3,       // the kernel refused the read (ptrace restrictions)
};

// What a rank says of one round. A rank may arrive at round k+1 while others still read its
// round k entry, so entries alternate by the round's parity: by the time a rank arrives at
// k+2, every rank has finished round k.
struct RoundEntry {
  std::atomic<uint64_t> bytes_per_rank;  // M of the call the round belongs to (or kOptOutBytes)
  std::atomic<uint32_t> round_in_call;   // which of the call's rounds this is
  std::atomic<uint32_t> rounds_in_call;  // how many rounds the call has
  // One node: where the other ranks read this rank's messages straight from (its send buffer
  // in its own address space, with process_vm_readv); 0 when its row is in the SSB.
  std::atomic<uint64_t> send_address;
  // One node, alltoallv: how this rank's row lies (shm/plan/local_vector_plan.h's StagedRow): in its
  // region of the round's SSB half, or read from send_address.
  std::atomic<uint32_t> row_staged;
  // One node, alltoallv: this rank's share of the count digest (the shares of all ranks sum to
  // zero when every pair agrees), and the bytes of its row, for local rank 0's counters.
  std::atomic<uint64_t> count_digest;
  std::atomic<uint64_t> row_bytes;
};

// One nonblocking call as a rank starts it: the daemon reads the row from the rank's send buffer
// and writes the column into its receive buffer, both in the rank's own address space.
struct NonblockingEntry {
  std::atomic<uint64_t> send_address;
  std::atomic<uint64_t> recv_address;
  std::atomic<uint64_t> bytes_per_rank;
  // 0 for an alltoall; for an alltoallv, the address in the rank's own memory of its
  // nonblocking alltoallv tables (NonblockingTable below), which the daemon reads like the data.
  std::atomic<uint64_t> tables_address;
};

// A nonblocking alltoallv's tables in the rank's memory: kNonblockingTables arrays of one uint64_t
// per group rank, in this order (bytes and byte offsets, as ohio_alltoallv takes them).
enum NonblockingTable : uint32_t { kSendBytes = 0, kSendAt, kRecvBytes, kRecvAt, kNonblockingTables };

struct alignas(kCacheLine) RankSlot {
  std::atomic<uint32_t> arrived_round;  // this rank's part of the round is published
  std::atomic<uint32_t> done_round;     // copy-out of this round is complete
  std::atomic<uint32_t> consumed;       // deliveries of arrived_round copied out so far
  std::atomic<uint32_t> pid;            // the rank's process, for single copies
  // The round this rank waits to see in finished_round (0: it waits for none): the daemon wakes
  // sleeping ranks when a round finishes only if one waits for it, not every time (a rank asleep
  // for its next round's blocks would wake for nothing). Written before the rank looks, read by
  // the daemon after it publishes, both sequentially consistent: one of them sees the other.
  std::atomic<uint32_t> awaiting_finished;
  // The PID namespace `pid` is a number in (client/libohio/single_copy.h PidNamespaceId; 0:
  // unknown): a pid names the rank's process only to ranks of the same namespace, so ranks read
  // each other in place only when all of the node's ranks publish the same one.
  std::atomic<uint64_t> pid_namespace;
  RoundEntry rounds[2];                 // by round parity
  // The first fault of this rank's reads in alltoallv round fault_round, published before it is
  // done: once every rank is done, every rank reads the same faults and fails alike.
  std::atomic<uint32_t> fault_round;
  std::atomic<uint32_t> fault_kind;     // VectorFault
  std::atomic<uint32_t> fault_source;   // group rank read from
  std::atomic<uint64_t> fault_sent;     // bytes it sends this rank (or the displacement read)
  std::atomic<uint64_t> fault_expected; // bytes this rank expects of it
  // Nonblocking calls: every call up to nonblocking_started is in its entry (call s in s mod
  // kNonblockingDepth), for the daemon to move.
  std::atomic<uint32_t> nonblocking_started;
  NonblockingEntry nonblocking[kNonblockingDepth];
};

inline RoundEntry& EntryFor(RankSlot* slot, uint32_t round) { return slot->rounds[round & 1]; }
inline const RoundEntry& EntryFor(const RankSlot* slot, uint32_t round) { return slot->rounds[round & 1]; }

// Whether a round counter (an arrival, a completion) has reached `round`: at most 2^31 ahead of
// it, modulo 2^32.
inline bool RoundReached(uint32_t value, uint32_t round) { return static_cast<int32_t>(value - round) >= 0; }

struct SegmentLayout {
  uint32_t local_ranks = 0;  // slots and count tables
  uint32_t group_size = 0;   // sizes the count tables
  uint64_t slots_offset = 0;
  uint64_t count_tables_offset = 0;
  uint64_t ssb_offset = 0;
  uint64_t ssb_bytes = 0;
  uint64_t srb_offset = 0;
  uint64_t srb_bytes = 0;
  uint64_t segment_bytes = 0;
  // Daemon only (0 where a rank attached): CubeOutBytes per round parity, the two together.
  uint64_t cube_out_offset = 0;
  uint64_t cube_out_bytes = 0;
};

// SSB and SRB start on page boundaries so that they can be registered with an HCA on their own.
constexpr uint64_t RoundUp(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

// Bytes a group's SRB holds beyond the srb_bytes it plans with: a header line for every slot of
// an eager round's two halves (shm/plan/eager_plan.h), so that a block as large as a slot's share of
// srb_bytes fits with its header, for at most group_size - 1 source nodes (the bound keeps the
// layout a function of what the segment cache keys by).
inline uint64_t SrbHeaderRoomBytes(uint32_t group_size) {
  return group_size > 1 ? 2 * kCacheLine * uint64_t{group_size - 1} : 0;
}

// Daemon only, per round parity: the header lines and size tables of this node's messages of an
// alltoallv run as a hypercube (shm/plan/vector_cube.h), one per step: at most ceil(log2 group
// size) steps of group size / 2 entries. Inside the segment because puts gather them from
// registered memory.
inline uint64_t CubeOutBytes(uint32_t group_size) {
  uint64_t steps = 0;
  while ((uint64_t{1} << steps) < group_size) ++steps;
  return steps * (kCacheLine + RoundUp(uint64_t{group_size / 2} * sizeof(uint32_t), kCacheLine));
}

inline SegmentLayout ComputeSegmentLayout(uint32_t local_ranks, uint32_t group_size, uint64_t ssb_bytes,
                                          uint64_t srb_bytes) {
  SegmentLayout l;
  l.local_ranks = local_ranks;
  l.group_size = group_size;
  l.slots_offset = RoundUp(sizeof(SegmentHeader), kCacheLine);
  l.count_tables_offset = RoundUp(l.slots_offset + uint64_t{local_ranks} * sizeof(RankSlot), kCacheLine);
  l.cube_out_offset = RoundUp(l.count_tables_offset + 2 * uint64_t{local_ranks} * CountTableBytes(group_size), kCacheLine);
  l.cube_out_bytes = CubeOutBytes(group_size);
  l.ssb_offset = RoundUp(l.cube_out_offset + 2 * l.cube_out_bytes, kPage);
  l.ssb_bytes = ssb_bytes;
  l.srb_offset = RoundUp(l.ssb_offset + ssb_bytes, kPage);
  l.srb_bytes = srb_bytes == 0 ? 0 : srb_bytes + SrbHeaderRoomBytes(group_size);
  l.segment_bytes = RoundUp(l.srb_offset + l.srb_bytes, kPage);
  return l;
}

}  // namespace ohio
