// Alltoallv across nodes, as pure functions shared by the daemon and the ranks: where a rank
// stages its row, what a node puts to each other node, and where a rank finds its pieces in a
// block that landed. Sender and receiver compute all of it from their own node's count tables
// (shm/segment_layout.h), by MPI's rule that what rank a sends b is what b expects of a: no
// counts travel.
//
// A call whose every node's part fits is one eager round (shm/plan/eager_plan.h): same slots, same
// header, same credits. Any other call goes in several (shm/plan/vector_staging.h).
// - Each local rank owns an equal region of the round's SSB half and stages its row there by
//   destination node, then destination rank, in group order; nothing waits for the others'
//   counts before copying in.
// - The block node n puts to node j gathers from every region (local ranks in order) the part
//   for node j: pieces ordered by (sender, receiver), zero counts taking no room, so zero-count
//   pairs cost nothing on the wire. The receiver finds piece (l, r) after the pieces before it,
//   whose sizes its own ranks expect.
// - A call fits when every rank's row fits its region and every block, either way, fits a slot.
//   Both ends of a node pair compute both directions' block sizes, so they agree whether the
//   pair fits; a node that does not fit says so in its header, and every node stages the call
//   over several rounds alike.
// - The counts are checked without exchanging them: every node adds h(a, b, bytes) for what
//   its ranks a send every rank b, and subtracts h(a, b, bytes) for what its ranks b expect of
//   every rank a; the shares of all nodes, carried in the eager headers, sum to zero when every
//   pair agrees (and to anything else, but with probability 2^-64, when one does not).
#pragma once

#include <cstdint>
#include <vector>

#include "common/mix64.h"
#include "shm/plan/copy_plan.h"
#include "shm/plan/eager_plan.h"
#include "shm/plan/exchange_plan.h"
#include "shm/plan/group_shape.h"
#include "shm/segment_layout.h"

namespace ohio {

// One node's count tables: ppn tables of group-size entries, in local rank order (as they lie
// in the segment).
struct NodeCounts {
  const CountEntry* tables = nullptr;
  uint32_t group_size = 0;
  const CountEntry* of(uint32_t local) const { return tables + uint64_t{local} * group_size; }
};

// The SSB bytes each local rank of `node` may stage its row in (cache-line multiples).
uint64_t VectorRegionBytes(const GroupShape& shape, const EagerLayout& layout, uint32_t node);

// Bytes a rank whose send table is `table` stages: its whole row.
uint64_t VectorRowBytes(const GroupShape& shape, const CountEntry* table);
// Bytes a rank whose send table is `table` sends the ranks of node `dest`.
uint64_t VectorRowBytesTo(const GroupShape& shape, const CountEntry* table, uint32_t dest);
// Where the part of that row for node `dest` starts when the row is staged whole: parts by
// destination node, each the rank's pieces for that node's ranks in group order.
uint64_t VectorRowOffset(const GroupShape& shape, const CountEntry* table, uint32_t dest);
// Whether that row fits `region` bytes (every count checked first: no sum wraps around).
bool VectorRowFits(const GroupShape& shape, const CountEntry* table, uint64_t region);

// The copy plans below fill `spans`, cleared first: a rank passes the same vector every call, so
// that once it has grown a call plans its copies without allocating.

// Copy-in of a rank with these send counts and displacements: src into its send buffer, dst from
// the start of its region.
void PlanVectorCopyIn(const GroupShape& shape, const size_t* send_counts, const size_t* send_displs,
                      std::vector<CopySpan>* spans);

// Bytes node `node` sends to node `dest`, and expects from node `source`, by its own tables.
uint64_t VectorSendBlockBytes(const GroupShape& shape, uint32_t node, const NodeCounts& counts, uint32_t dest);
uint64_t VectorRecvBlockBytes(const GroupShape& shape, uint32_t node, const NodeCounts& counts, uint32_t source);

// Whether this node's part of the call is one eager round: the same answer at both ends of every
// node pair whose counts agree.
bool VectorFits(const GroupShape& shape, const EagerLayout& layout, uint32_t node, const NodeCounts& counts);

// This node's share of the count digest: the sum of its ranks' shares.
uint64_t VectorCountDigest(const GroupShape& shape, uint32_t node, const NodeCounts& counts);
// One rank's share: what group rank `rank` sends and expects by its own table.
uint64_t VectorRankDigest(const GroupShape& shape, uint32_t rank, const CountEntry* table);
// The halves of one entry's part of that share that depend on the pair alone: a rank keeps them
// for its group (VectorPairKeysOf), so that summing its share as it writes its table
// (WriteVectorRow) hashes each count once.
struct VectorPairKeys {
  uint64_t sent;      // for what the rank sends the peer
  uint64_t expected;  // for what it expects of the peer
};
// Group rank `rank`'s keys, one per rank of the group.
std::vector<VectorPairKeys> VectorPairKeysOf(const GroupShape& shape, uint32_t rank);
// One entry's part of a rank's share: it sends the peer of `keys` `sent` bytes and expects
// `expected`.
inline uint64_t VectorPairDigest(const VectorPairKeys& keys, uint64_t sent, uint64_t expected) {
  return Mix64(keys.sent ^ sent) - Mix64(keys.expected ^ expected);
}

// Bytes moved between this node's own ranks.
uint64_t VectorLocalBytes(const GroupShape& shape, uint32_t node, const NodeCounts& counts);

// This node's puts of a vector round of parity 0, one per other node in schedule order (as
// PlanEagerPuts), each gathering from every local rank l in order the piece piece_of(l, dest)
// returns (an SsbPiece of the SSB half; one of no bytes is left out), srb_offset at the header
// in the peer's slot.
template <typename PieceOf>
void PlanVectorPutsOf(const GroupShape& shape, uint32_t node, const EagerLayout& layout, PieceOf piece_of,
                      std::vector<Put>* puts) {
  puts->clear();
  const auto steps = PairwiseSchedule(shape.nodes(), node);
  for (uint32_t step = 0; step < steps.size(); ++step) {
    Put p;
    p.dest = steps[step].send_to;
    p.step = step;
    p.delivery = EagerImmDelivery(0);
    p.srb_offset = EagerSlotOffset(layout, p.dest, node, 0);
    for (uint32_t l = 0; l < shape.ppn(node); ++l) {
      const SsbPiece piece = piece_of(l, p.dest);
      if (piece.bytes == 0) continue;
      p.pieces.push_back(piece);
      p.bytes += piece.bytes;
    }
    puts->push_back(std::move(p));
  }
}

// PlanVectorPutsOf for a call of one round: each rank's whole row part for the peer.
std::vector<Put> PlanVectorPuts(const GroupShape& shape, uint32_t node, const EagerLayout& layout,
                                const NodeCounts& counts);

// The deliveries a vector round of parity 0 brings to `node`, in schedule order (as
// PlanEagerDeliveries), bytes as this node expects them.
std::vector<Delivery> PlanVectorDeliveries(const GroupShape& shape, uint32_t node, const EagerLayout& layout,
                                           const NodeCounts& counts);

// Copy-out by local rank `local` of `node` of the block from node `source`: src from the
// block's first byte (past the header), dst into the rank's receive buffer.
void PlanVectorCopyOutBlock(const GroupShape& shape, uint32_t node, uint32_t local, const NodeCounts& counts,
                            uint32_t source, const size_t* recv_displs, std::vector<CopySpan>* spans);

// Copy-out by local rank `local` of what its own node's ranks send it: src from the start of the
// SSB half, dst into its receive buffer. A pair whose counts disagree is left out (the round
// fails on the digest).
void PlanVectorCopyOutOnNode(const GroupShape& shape, uint32_t node, uint32_t local, const EagerLayout& layout,
                            const NodeCounts& counts, const size_t* recv_displs, std::vector<CopySpan>* spans);

// A node's plan of its part of a vector round, kept from round to round: applications call
// alltoallv in a loop with the same counts, and planning again would walk every table and
// allocate the puts and deliveries anew for the same answer.
struct VectorRoundPlan {
  std::vector<CountEntry> counts;  // the snapshot the plan was made from
  bool fits = false;               // VectorFits
  bool stageable = false;          // VectorStreamRounds: its streams take few enough rounds
  uint32_t stream_rounds = 0;      // what they take, when stageable
  // The call's first round: PlanVectorPuts and PlanVectorDeliveries if it fits; else the puts
  // of stream round 0 (PlanVectorStreamPuts). Nothing below is planned when it neither fits nor
  // is stageable.
  std::vector<Put> puts;
  // By destination node: the index in `puts` of the put to it (0 for a node it has none to:
  // this node itself, or a stream round that skips it).
  std::vector<uint32_t> put_of_dest;
  std::vector<Delivery> deliveries;
  uint64_t digest = 0;             // VectorCountDigest
  uint64_t local_bytes = 0;        // VectorLocalBytes
  uint64_t sent_bytes = 0;         // what this node's ranks send, to every node
};

// Brings `plan` up to date with the count tables of `node` at `tables` (a snapshot: the ranks'
// tables are theirs to write, and what is checked must be what is put): planned again only if a
// count differs from the snapshot's (displacements place bytes within a rank's own buffers,
// which the plan never sees). True if it planned.
bool UpdateVectorRoundPlan(const GroupShape& shape, uint32_t node, const EagerLayout& layout,
                           const CountEntry* tables, VectorRoundPlan* plan);

}  // namespace ohio
