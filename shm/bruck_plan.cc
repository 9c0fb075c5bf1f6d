#include "shm/bruck_plan.h"

#include "shm/copy_plan.h"

namespace ohio {
namespace {

uint32_t Wrap(int64_t node, uint32_t nodes) {
  int64_t n = node % static_cast<int64_t>(nodes);
  return static_cast<uint32_t>(n < 0 ? n + nodes : n);
}

uint32_t HighestBit(uint32_t v) { return 31 - static_cast<uint32_t>(__builtin_clz(v)); }

uint64_t AlignUp64(uint64_t v) { return (v + 63) & ~uint64_t{63}; }

// The block of index `index` in `message` (present by construction: callers ask only for
// indices whose bit `message.round` is set).
const BruckBlock& BlockOfIndex(const BruckMessage& message, uint32_t index) {
  for (const BruckBlock& b : message.blocks) {
    if (b.index == index) return b;
  }
  return message.blocks.front();  // unreachable for a well-formed question
}

// What `node` receives in rounds 0..rounds-1: round k's message is the one node - 2^k sends.
std::vector<BruckMessage> ReceivedMessages(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t node,
                                           uint32_t rounds) {
  std::vector<BruckMessage> received;
  for (uint32_t k = 0; k < rounds; ++k) {
    received.push_back(
        PlanBruckMessage(shape, bytes_per_rank, Wrap(int64_t{node} - (int64_t{1} << k), shape.nodes()), k));
  }
  return received;
}

// Inboxes laid one after another, each 64-byte aligned, sized by what lands in it.
BruckInboxes InboxesFor(const std::vector<BruckMessage>& received) {
  BruckInboxes in;
  for (const BruckMessage& m : received) {
    in.offsets.push_back(in.bytes);
    in.sizes.push_back(m.bytes);
    in.bytes = AlignUp64(in.bytes + m.bytes);
  }
  return in;
}

}  // namespace

uint32_t BruckRounds(uint32_t nodes) { return nodes <= 1 ? 0 : HighestBit(nodes - 1) + 1; }

BruckMessage PlanBruckMessage(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t sender, uint32_t round) {
  const uint32_t n = shape.nodes();
  BruckMessage m;
  m.round = round;
  m.from = sender;
  m.to = Wrap(int64_t{sender} + (int64_t{1} << round), n);
  const uint32_t moved_bits = (1u << round) - 1;  // bits of the rounds before this one
  for (uint32_t j = 1; j < n; ++j) {
    if ((j >> round & 1) == 0) continue;
    BruckBlock b;
    b.index = j;
    b.source = Wrap(int64_t{sender} - (j & moved_bits), n);
    b.dest = Wrap(int64_t{b.source} + j, n);
    b.bytes = bytes_per_rank * shape.ppn(b.source) * shape.ppn(b.dest);
    b.offset = m.bytes;
    m.bytes += b.bytes;
    m.blocks.push_back(b);
  }
  return m;
}

BruckInboxes PlanBruckInboxes(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t node) {
  return InboxesFor(ReceivedMessages(shape, bytes_per_rank, node, BruckRounds(shape.nodes())));
}

std::vector<BruckPiece> PlanBruckGather(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t node,
                                        uint32_t round) {
  // The inboxes of every round, but only those before `round` hold anything to forward.
  const std::vector<BruckMessage> received = ReceivedMessages(shape, bytes_per_rank, node, BruckRounds(shape.nodes()));
  const BruckInboxes inboxes = InboxesFor(received);
  std::vector<BruckPiece> pieces;
  for (const BruckBlock& b : PlanBruckMessage(shape, bytes_per_rank, node, round).blocks) {
    if (b.bytes == 0) continue;
    const uint32_t moved = b.index & ((1u << round) - 1);
    BruckPiece p;
    p.bytes = b.bytes;
    if (moved == 0) {
      p.offset = SsbBlockOffset(shape, node, b.dest, bytes_per_rank);
    } else {
      const uint32_t last = HighestBit(moved);  // the round that brought it here
      p.forwarded = true;
      p.offset = inboxes.offsets[last] + BlockOfIndex(received[last], b.index).offset;
    }
    if (!pieces.empty() && pieces.back().forwarded == p.forwarded &&
        pieces.back().offset + pieces.back().bytes == p.offset) {
      pieces.back().bytes += p.bytes;
    } else {
      pieces.push_back(p);
    }
  }
  return pieces;
}

std::vector<BruckArrival> PlanBruckArrivals(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t node) {
  const uint32_t n = shape.nodes();
  const std::vector<BruckMessage> received = ReceivedMessages(shape, bytes_per_rank, node, BruckRounds(n));
  const BruckInboxes inboxes = InboxesFor(received);
  std::vector<BruckArrival> arrivals;
  for (uint32_t s = 0; s < n; ++s) {
    if (s == node) continue;
    const uint32_t index = Wrap(int64_t{node} - s, n);
    const uint32_t last = HighestBit(index);
    const BruckBlock& b = BlockOfIndex(received[last], index);
    arrivals.push_back({s, last, inboxes.offsets[last] + b.offset, b.bytes});
  }
  return arrivals;
}

}  // namespace ohio
