#include "shm/plan/bruck_plan.h"

#include <algorithm>

#include "shm/plan/copy_plan.h"

namespace ohio {
namespace {

uint32_t Wrap(int64_t node, uint32_t nodes) {
  int64_t n = node % static_cast<int64_t>(nodes);
  return static_cast<uint32_t>(n < 0 ? n + nodes : n);
}

uint32_t HighestBit(uint32_t v) { return 31 - static_cast<uint32_t>(__builtin_clz(v)); }

bool PowerOfTwo(uint32_t n) { return n != 0 && (n & (n - 1)) == 0; }

}  // namespace

uint32_t BruckAhead(uint32_t nodes, uint32_t node, uint32_t distance) {
  return PowerOfTwo(nodes) ? node ^ distance : Wrap(int64_t{node} + distance, nodes);
}
uint32_t BruckBehind(uint32_t nodes, uint32_t node, uint32_t distance) {
  return PowerOfTwo(nodes) ? node ^ distance : Wrap(int64_t{node} - distance, nodes);
}

namespace {
// The index a block from `source` to `dest` travels under: the distance BruckAhead covers from one to
// the other.
uint32_t IndexOf(uint32_t nodes, uint32_t source, uint32_t dest) {
  return PowerOfTwo(nodes) ? source ^ dest : Wrap(int64_t{dest} - source, nodes);
}

// The most blocks any round's message may carry among `nodes`: round k's carries the indices
// 1..nodes-1 with bit k set. All inboxes share one stride, so this round is the one that must
// fit (FitsBruck) and that sizes the inboxes (BruckAreaBytes).
uint64_t MostBlocksInARound(uint32_t nodes) {
  uint64_t most = 0;
  for (uint32_t k = 0; k < BruckRounds(nodes); ++k) {
    uint64_t blocks = 0;
    for (uint32_t j = 1; j < nodes; ++j) blocks += (j >> k) & 1;
    most = std::max(most, blocks);
  }
  return most;
}

// The block of index `index` in `message` (present by construction: callers ask only for
// indices whose bit `message.round` is set).
const BruckBlock& BlockOfIndex(const BruckMessage& message, uint32_t index) {
  for (const BruckBlock& b : message.blocks) {
    if (b.index == index) return b;
  }
  return message.blocks.front();  // unreachable for a well-formed question
}

// What `node` receives in rounds 0..rounds-1: round k's message is the one BruckSenderTo sends.
std::vector<BruckMessage> ReceivedMessages(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t node,
                                           uint32_t rounds) {
  std::vector<BruckMessage> received;
  for (uint32_t k = 0; k < rounds; ++k) {
    received.push_back(PlanBruckMessage(shape, bytes_per_rank, BruckSenderTo(shape.nodes(), node, k), k));
  }
  return received;
}

// Inbox k at k strides, its message behind its header.
BruckInboxes InboxesFor(const std::vector<BruckMessage>& received, uint64_t stride) {
  BruckInboxes in;
  for (uint32_t k = 0; k < received.size(); ++k) {
    in.offsets.push_back(k * stride + kBruckHeaderBytes);
    in.sizes.push_back(received[k].bytes);
  }
  in.bytes = received.size() * stride;
  return in;
}

}  // namespace

uint32_t BruckRounds(uint32_t nodes) { return nodes <= 1 ? 0 : HighestBit(nodes - 1) + 1; }

bool BruckPairsNodes(uint32_t nodes) { return PowerOfTwo(nodes); }

uint32_t BruckSenderTo(uint32_t nodes, uint32_t node, uint32_t round) { return BruckBehind(nodes, node, 1u << round); }

uint32_t BruckRoundFrom(uint32_t nodes, uint32_t node, uint32_t from) {
  const uint32_t rounds = BruckRounds(nodes);
  for (uint32_t k = 0; k < rounds; ++k) {
    if (from != node && BruckSenderTo(nodes, node, k) == from) return k;
  }
  return rounds;
}

uint64_t BruckBytesSent(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t node) {
  uint64_t bytes = 0;
  for (uint32_t k = 0; k < BruckRounds(shape.nodes()); ++k) bytes += PlanBruckMessage(shape, bytes_per_rank, node, k).bytes;
  return bytes;
}

uint64_t BruckInboxStride(uint32_t nodes, uint64_t area_bytes) {
  const uint32_t rounds = BruckRounds(nodes);
  if (rounds == 0) return 0;
  const uint64_t stride = area_bytes / rounds;
  return stride - stride % 64;
}

uint64_t BruckAreaBytes(const GroupShape& shape, uint64_t bytes_per_rank) {
  const uint32_t n = shape.nodes();
  const uint32_t rounds = BruckRounds(n);
  if (rounds == 0) return 0;
  const uint64_t max_ppn = shape.max_ppn();
  // Every inbox is as large as the largest round's message (the stride is one for all rounds),
  // whose blocks FitsBruck bounds by M x max ppn^2 each.
  const uint64_t most_blocks = MostBlocksInARound(n);
  const uint64_t per_block = max_ppn * max_ppn;
  const uint64_t limit = UINT64_MAX / 2 / rounds;  // room for the header, rounding and rounds
  if (bytes_per_rank != 0 && (per_block * most_blocks > limit / bytes_per_rank)) return UINT64_MAX;
  const uint64_t message = per_block * most_blocks * bytes_per_rank;
  const uint64_t stride = (kBruckHeaderBytes + message + 63) / 64 * 64;
  return stride * rounds;
}

bool FitsBruck(const GroupShape& shape, uint64_t bytes_per_rank, uint64_t area_bytes, uint64_t ssb_half) {
  const uint32_t n = shape.nodes();
  const uint64_t stride = BruckInboxStride(n, area_bytes);
  if (stride < kBruckHeaderBytes) return false;
  const uint64_t max_ppn = shape.max_ppn();
  const uint64_t m = bytes_per_rank;
  if (m > 0 && ssb_half / (max_ppn * uint64_t{shape.size()}) < m) return false;
  // Bounded by the blocks a round's message may carry, each at most M x max ppn^2: the bound
  // depends on nothing node-specific. Divisions, not products: M may be anything a caller passes.
  return m == 0 || (stride - kBruckHeaderBytes) / (MostBlocksInARound(n) * max_ppn * max_ppn) >= m;
}

BruckMessage PlanBruckMessage(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t sender, uint32_t round) {
  const uint32_t n = shape.nodes();
  BruckMessage m;
  m.round = round;
  m.from = sender;
  m.to = BruckAhead(n, sender, 1u << round);
  const uint32_t moved_bits = (1u << round) - 1;  // bits of the rounds before this one
  for (uint32_t j = 1; j < n; ++j) {
    if ((j >> round & 1) == 0) continue;
    BruckBlock b;
    b.index = j;
    b.source = BruckBehind(n, sender, j & moved_bits);
    b.dest = BruckAhead(n, b.source, j);
    b.bytes = bytes_per_rank * shape.ppn(b.source) * shape.ppn(b.dest);
    b.offset = m.bytes;
    m.bytes += b.bytes;
    m.blocks.push_back(b);
  }
  return m;
}

BruckInboxes PlanBruckInboxes(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t node, uint64_t area_bytes) {
  return InboxesFor(ReceivedMessages(shape, bytes_per_rank, node, BruckRounds(shape.nodes())),
                    BruckInboxStride(shape.nodes(), area_bytes));
}

std::vector<BruckPiece> PlanBruckGather(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t node,
                                        uint32_t round, uint64_t area_bytes) {
  // The inboxes of every round, but only those before `round` hold anything to forward.
  const std::vector<BruckMessage> received = ReceivedMessages(shape, bytes_per_rank, node, BruckRounds(shape.nodes()));
  const BruckInboxes inboxes = InboxesFor(received, BruckInboxStride(shape.nodes(), area_bytes));
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

std::vector<BruckArrival> PlanBruckArrivals(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t node,
                                           uint64_t area_bytes) {
  const uint32_t n = shape.nodes();
  const std::vector<BruckMessage> received = ReceivedMessages(shape, bytes_per_rank, node, BruckRounds(n));
  const BruckInboxes inboxes = InboxesFor(received, BruckInboxStride(n, area_bytes));
  std::vector<BruckArrival> arrivals;
  for (uint32_t s = 0; s < n; ++s) {
    if (s == node) continue;
    const uint32_t index = IndexOf(n, s, node);
    const uint32_t last = HighestBit(index);
    const BruckBlock& b = BlockOfIndex(received[last], index);
    arrivals.push_back({s, last, inboxes.offsets[last] + b.offset, b.bytes});
  }
  return arrivals;
}

std::vector<Delivery> PlanBruckDeliveries(const GroupShape& shape, uint64_t bytes_per_rank, uint32_t node,
                                          uint64_t area_bytes) {
  std::vector<BruckArrival> arrivals = PlanBruckArrivals(shape, bytes_per_rank, node, area_bytes);
  std::stable_sort(arrivals.begin(), arrivals.end(),
                   [](const BruckArrival& a, const BruckArrival& b) { return a.round < b.round; });
  std::vector<Delivery> out;
  for (const BruckArrival& a : arrivals) {
    Delivery d;
    d.source = a.source;
    d.step = a.round;
    d.bytes = a.bytes;
    d.srb_offset = a.offset;
    out.push_back(d);
  }
  return out;
}

}  // namespace ohio
