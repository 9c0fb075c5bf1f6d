// The hypercube exchange among nodes for tiny blocks (seeds/001 "HRWG"), in the form Bruck et
// al. gave it for any number of nodes: ceil(log2 N) rounds instead of pairwise's N-1, each
// node sending ONE message per round, at the price of forwarding blocks through intermediate
// nodes. Pure functions shared by the daemon, the ranks and ohio-plan, so nothing of the plan
// travels over the wire.
//
// Blocks are numbered by distance: on node i, index j (1..N-1) starts as i's coalesced block
// for node i+j (mod N). In round k node i sends every index whose bit k is set, in increasing
// index order, as one message to node i+2^k, which keeps each under the same index. After
// rounds 0..k-1, index j on node p holds the block from node p - (j mod 2^k) to node
// p - (j mod 2^k) + j; after the last round, index j on node p is what node p-j sent to p.
// A block travels as many hops as its distance has bits set and ends in the round of its
// highest bit.
//
// A message lands whole, contiguously, in the receiver's inbox of that round (one gather on
// the sending side, one transfer, one landing place): the blocks meant for the receiver are
// copied out from there by its ranks, the others are gathered from there into later rounds'
// messages. Own blocks are gathered from the SSB, laid as v2/v3 lay them (SsbBlockOffset).
//
// Executing it (ohiod does not yet; this is what the daemon side must keep true):
// - A node sends its round-k message only once its inboxes 0..k-1 have landed. Then, when
//   all of a node's inboxes of call c have landed, it has heard (through the chain of
//   messages) from every node, so every node's ranks had arrived at c and copied c-1 out:
//   that is the credit for putting c+1 into the half c-1 used, on any node, although a node
//   never hears directly from the nodes it sends to.
// - Agreement on M travels the same way: each message's header carries its sender's M and
//   whether everything the sender has heard so far agreed; a receiver whose M equals the
//   header's may publish the blocks at once (their sizes are consistent), and after the last
//   round every node knows whether any node disagreed. A node that cannot send data (its
//   ranks disagree or opted out) still sends every round's message, header only, flagged, so
//   nobody waits and everybody learns why.
#pragma once

#include <cstdint>
#include <vector>

#include "shm/group_shape.h"

namespace ohio {

// ceil(log2 nodes); 0 for one node.
uint32_t BruckRounds(uint32_t nodes);

// One coalesced block (everything node `source`'s ranks send to node `dest`'s ranks) inside a
// round's message.
struct BruckBlock {
  uint32_t source = 0;
  uint32_t dest = 0;
  uint32_t index = 0;        // its distance dest - source (mod N), the index it travels under
  uint64_t bytes = 0;        // M * ppn(source) * ppn(dest)
  uint64_t offset = 0;       // where it starts in the message
};

struct BruckMessage {
  uint32_t round = 0;
  uint32_t from = 0;  // sending node
  uint32_t to = 0;    // from + 2^round (mod N)
  std::vector<BruckBlock> blocks;
  uint64_t bytes = 0;  // sum of the blocks
};

// The message node `sender` sends in `round` (< BruckRounds), for a call of M bytes per rank.
// The message a node receives in round k is the one node - 2^k sends.
BruckMessage PlanBruckMessage(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t sender, uint32_t round);

// Where node `node` keeps the messages it receives: inbox k starts at offsets[k] of its
// receive area (64-byte aligned, so the daemon may prefix each with a cache-line header in
// front of it); `bytes` is the whole area.
struct BruckInboxes {
  std::vector<uint64_t> offsets;
  std::vector<uint64_t> sizes;
  uint64_t bytes = 0;
};
BruckInboxes PlanBruckInboxes(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t node);

// A piece of a message as the sender gathers it: from its own SSB (a block it sends itself)
// or from its receive area (a block it forwards). Adjacent pieces of the same area are merged.
struct BruckPiece {
  bool forwarded = false;  // true: offset is into the receive area; false: into the SSB
  uint64_t offset = 0;
  uint64_t bytes = 0;
};
std::vector<BruckPiece> PlanBruckGather(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t node,
                                        uint32_t round);

// Where the block node `source` sent to `node` ends up on `node`: its offset in the receive
// area, and the round whose message brought it (the ranks may copy it out once that round's
// message has landed). One entry per source node != node, in source order.
struct BruckArrival {
  uint32_t source = 0;
  uint32_t round = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};
std::vector<BruckArrival> PlanBruckArrivals(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t node);

}  // namespace ohio
