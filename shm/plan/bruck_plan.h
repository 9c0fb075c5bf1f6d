// The hypercube exchange among nodes for tiny blocks (the hypercube of Sur, Jin and Panda, docs/GLOSSARY.md), in the form Bruck et
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
// For a power of two N the same holds with XOR in place of + and - (the hypercube proper):
// round k pairs node i with node i XOR 2^k, so each connection carries a message each way in
// the same round and TCP's acknowledgement of one rides on the other (a rotation sends one way
// on every connection, and each small message cost a packet of acknowledgement of its own).
// Same rounds, same messages' sizes, same indices per message.

// A message lands whole, contiguously, in the receiver's inbox of that round (one gather on
// the sending side, one transfer, one landing place): the blocks meant for the receiver are
// copied out from there by its ranks, the others are gathered from there into later rounds'
// messages. Own blocks are gathered from the SSB, laid as v2/v3 lay them (SsbBlockOffset).
//
// A round's receive area (the SRB half of its parity) is cut into ceil(log2 N) equal inboxes,
// whatever M: a 64-byte header (who sent it, its M) at the start of each, the message behind
// it. So a receiver finds the header of every message where it expects it even when the
// sender's M is not its own, and a wrong M is seen instead of being read as blocks.
//
// What the daemon (daemon/exchange/exchange.cc) keeps true running it:
// - A node sends its round-k message only once its inboxes 0..k-1 have landed. Then, when
//   all of a node's inboxes of call c have landed, it has heard (through the chain of
//   messages) from every node, so every node's ranks had arrived at c and copied c-1 out:
//   that is the credit for putting c+1 into the half c-1 used, on any node, although a node
//   never hears directly from the nodes it sends to.
// - A node forwards blocks only from messages whose header carried its own M, so a header
//   with this node's M vouches for every block behind it.
#pragma once

#include <cstdint>
#include <vector>

#include "shm/plan/exchange_plan.h"
#include "shm/plan/group_shape.h"

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
  uint32_t to = 0;    // from + 2^round (mod N), or from XOR 2^round for a power of two
  std::vector<BruckBlock> blocks;
  uint64_t bytes = 0;  // sum of the blocks
};

// Whether the rounds pair the nodes (XOR, N a power of two) rather than rotate them.
bool BruckPairsNodes(uint32_t nodes);

// The node `distance` ahead of `node`, and the one `distance` behind it: XOR both ways among a
// power of two (the nodes pair up), else the rotation's + and - (mod N). Index j on node i starts
// as i's block for BruckAhead(i, j) and ends as what BruckBehind(i, j) sent i.
uint32_t BruckAhead(uint32_t nodes, uint32_t node, uint32_t distance);
uint32_t BruckBehind(uint32_t nodes, uint32_t node, uint32_t distance);

// The node whose round-`round` message lands in `node`'s inbox of that round: node - 2^round,
// or node XOR 2^round for a power of two.
uint32_t BruckSenderTo(uint32_t nodes, uint32_t node, uint32_t round);

// The round whose message from `from` lands at `node`; BruckRounds(nodes) when `from` sends
// `node` none.
uint32_t BruckRoundFrom(uint32_t nodes, uint32_t node, uint32_t from);

// The message node `sender` sends in `round` (< BruckRounds), for a call of M bytes per rank.
// The message a node receives in round k is the one BruckSenderTo sends.
BruckMessage PlanBruckMessage(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t sender, uint32_t round);

constexpr uint64_t kBruckHeaderBytes = 64;

// The bytes between the starts of two inboxes in a receive area of `area_bytes`: the same on
// every node and for every M (64-byte aligned).
uint64_t BruckInboxStride(uint32_t nodes, uint64_t area_bytes);

// The smallest receive area in which every message of a call of M bytes per rank fits its
// inbox behind its header (FitsBruck's inbox test), UINT64_MAX when that does not fit 64 bits:
// what a group's SRB half must hold for its hypercube calls up to M (shm/plan/buffer_sizing.h).
uint64_t BruckAreaBytes(const GroupShape& shape, uint64_t bytes_per_rank);

// Whether a call of M bytes per rank runs as a hypercube with receive areas of `area_bytes`
// and SSB halves of `ssb_half` bytes: every message fits its inbox behind its header on every
// node, and every rank's row fits its share of the SSB half. The same answer on every node.
bool FitsBruck(const GroupShape& shape, uint64_t bytes_per_rank, uint64_t area_bytes, uint64_t ssb_half);

// Where node `node` keeps the messages it receives: inbox k's message starts at offsets[k] of
// its receive area, behind the inbox's header at offsets[k] - kBruckHeaderBytes; `bytes` is
// the whole area the inboxes take.
struct BruckInboxes {
  std::vector<uint64_t> offsets;
  std::vector<uint64_t> sizes;
  uint64_t bytes = 0;
};
BruckInboxes PlanBruckInboxes(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t node, uint64_t area_bytes);

// A piece of a message as the sender gathers it: from its own SSB (a block it sends itself)
// or from its receive area (a block it forwards). Adjacent pieces of the same area are merged.
struct BruckPiece {
  bool forwarded = false;  // true: offset is into the receive area; false: into the SSB
  uint64_t offset = 0;
  uint64_t bytes = 0;
};
std::vector<BruckPiece> PlanBruckGather(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t node,
                                        uint32_t round, uint64_t area_bytes);

// Where the block node `source` sent to `node` ends up on `node`: its offset in the receive
// area, and the round whose message brought it (the ranks may copy it out once that round's
// message has landed). One entry per source node != node, in source order.
struct BruckArrival {
  uint32_t source = 0;
  uint32_t round = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};
std::vector<BruckArrival> PlanBruckArrivals(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t node,
                                           uint64_t area_bytes);

// The payload bytes node `node` sends in a call, over all its rounds' messages (forwarded
// blocks counted at every hop).
uint64_t BruckBytesSent(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t node);

// The arrivals as the ranks copy them out: in the order of the rounds that bring them (so the
// daemon publishes them as a prefix while inboxes land), step = that round.
std::vector<Delivery> PlanBruckDeliveries(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t node,
                                          uint64_t area_bytes);

}  // namespace ohio
