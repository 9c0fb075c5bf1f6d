// The hypercube alltoallv (shm/plan/vector_cube.h) simulated among 2 to 32 nodes, powers of two
// (XOR pairing) and not (the rotation, where the last step's sum comes from a window): every node builds
// each step's message (size table, its own blocks and those its inboxes brought) as soon as its
// earlier inboxes have landed, messages land in a random order (a step's inbox often before the
// receiver sent that step), and once all have landed every node finds every other node's block,
// byte for byte, where PlanVectorCubeArrivals says; the partial count digests and void flags
// summed along the messages give every node the whole group's; a table that lists more than its
// inbox holds is refused; the cap follows the inter-node table and the inboxes.
#include "shm/plan/vector_cube.h"

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "shm/plan/bruck_plan.h"
#include "shm/segment_layout.h"

namespace ohio {
namespace {

uint8_t ByteOf(uint32_t source, uint32_t dest, uint64_t i) {
  return static_cast<uint8_t>(source * 31 + dest * 7 + i * 13 + 1);
}

struct Message {
  uint32_t to = 0;
  uint32_t step = 0;
  std::vector<uint8_t> bytes;  // header line (and table), then the blocks
};

struct Node {
  VectorCubeInboxes inboxes;
  std::vector<uint8_t> srb;  // one SRB half: log2 N inboxes
  uint32_t sent = 0;         // steps sent so far
  uint64_t digest = 0;
  bool own_void = false;
};

// Runs one call among `nodes` with blocks of `sizes[source][dest]` bytes; `void_node` (if
// < nodes) cannot send its part. Checks every node's sums and, unless some node was void, every
// block where the receiver finds it.
void RunCall(uint32_t nodes, const std::vector<std::vector<uint32_t>>& sizes, uint32_t void_node, bool digest_zero,
             std::mt19937* rng) {
  SCOPED_TRACE("nodes " + std::to_string(nodes));
  const uint32_t steps = BruckRounds(nodes);
  uint32_t biggest = 0;
  for (const auto& row : sizes) {
    for (uint32_t b : row) biggest = std::max(biggest, b);
  }
  const uint64_t stride = RoundUp(VectorCubeLineBytes(nodes) + uint64_t{nodes / 2} * biggest, 64);
  std::vector<Node> node(nodes);
  uint64_t digest_sum = 0;
  for (uint32_t n = 0; n < nodes; ++n) {
    node[n].inboxes.Reset(nodes, stride);
    node[n].srb.assign(steps * stride, 0);
    node[n].digest = (*rng)();
    node[n].own_void = n == void_node;
    digest_sum += node[n].digest;
  }
  if (digest_zero) {
    node[0].digest -= digest_sum;
    digest_sum = 0;
  }
  std::deque<Message> in_flight;
  uint32_t landed = 0;
  while (landed < nodes * steps) {
    // Every node sends what it may; then one message, picked at random, lands.
    for (uint32_t n = 0; n < nodes; ++n) {
      Node& me = node[n];
      while (me.sent < steps && (me.sent == 0 || me.inboxes.landed(me.sent - 1))) {
        const uint32_t k = me.sent++;
        Message m;
        m.to = BruckAhead(nodes, n, 1u << k);
        m.step = k;
        const bool is_void = me.inboxes.VoidBefore(k, me.own_void);
        EagerHeader h{kEagerHeaderMagic, 1, kVectorBytes, is_void ? kEagerVectorCubeVoid : 0u, n, 0,
                      me.inboxes.Partial(k, me.digest), 0, {}};
        h.count_digest_tail = me.inboxes.Tail(k, me.digest);
        m.bytes.assign(is_void ? kEagerHeaderBytes : VectorCubeLineBytes(nodes), 0);
        std::memcpy(m.bytes.data(), &h, sizeof(h));
        if (!is_void) {
          std::vector<uint32_t> table(nodes / 2, 0);
          std::vector<uint8_t> blocks;
          PlanVectorCubeMessage(
              me.inboxes, nodes, n, k, table.data(), [&](uint32_t dest) { return sizes[n][dest]; },
              [&](uint32_t dest) {
                for (uint64_t i = 0; i < sizes[n][dest]; ++i) blocks.push_back(ByteOf(n, dest, i));
              },
              [&](uint64_t offset, uint64_t bytes) {
                ASSERT_LE(offset + bytes, me.srb.size());
                blocks.insert(blocks.end(), me.srb.begin() + offset, me.srb.begin() + offset + bytes);
              });
          std::memcpy(m.bytes.data() + kEagerHeaderBytes, table.data(), table.size() * sizeof(uint32_t));
          m.bytes.insert(m.bytes.end(), blocks.begin(), blocks.end());
        }
        ASSERT_LE(m.bytes.size(), stride) << "a message fits its inbox";
        in_flight.push_back(std::move(m));
      }
    }
    ASSERT_FALSE(in_flight.empty()) << "no node can send and nothing is in flight";
    const size_t pick = std::uniform_int_distribution<size_t>(0, in_flight.size() - 1)(*rng);
    Message m = std::move(in_flight[pick]);
    in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(pick));
    Node& to = node[m.to];
    uint8_t* inbox = to.srb.data() + m.step * stride;
    std::memcpy(inbox, m.bytes.data(), m.bytes.size());
    EagerHeader h;
    std::memcpy(&h, inbox, sizeof(h));
    ASSERT_TRUE(to.inboxes.Land(m.step, h, inbox));
    ++landed;
  }
  for (uint32_t n = 0; n < nodes; ++n) {
    SCOPED_TRACE("node " + std::to_string(n));
    EXPECT_EQ(node[n].inboxes.Total(node[n].digest), digest_sum);
    EXPECT_EQ(node[n].inboxes.VoidBefore(steps, node[n].own_void), void_node < nodes);
    if (void_node < nodes) continue;
    std::vector<uint64_t> offsets;
    PlanVectorCubeArrivals(nodes, n, stride, node[n].srb.data(), &offsets);
    for (uint32_t source = 0; source < nodes; ++source) {
      if (source == n) continue;
      uint32_t j = 1;
      while (BruckBehind(nodes, n, j) != source) ++j;
      const VectorCubeInboxes::Where where = node[n].inboxes.At(j, steps);
      EXPECT_FALSE(where.own);
      EXPECT_EQ(where.offset, offsets[source]);
      EXPECT_EQ(where.bytes, sizes[source][n]);
      for (uint64_t i = 0; i < sizes[source][n]; ++i) {
        ASSERT_EQ(node[n].srb[offsets[source] + i], ByteOf(source, n, i)) << "from " << source << " byte " << i;
      }
    }
  }
}

std::vector<std::vector<uint32_t>> RandomSizes(uint32_t nodes, uint32_t most, std::mt19937* rng) {
  std::vector<std::vector<uint32_t>> sizes(nodes, std::vector<uint32_t>(nodes, 0));
  for (uint32_t s = 0; s < nodes; ++s) {
    for (uint32_t d = 0; d < nodes; ++d) {
      // A quarter of the blocks empty: they take no room.
      if (s != d && (*rng)() % 4 != 0) sizes[s][d] = (*rng)() % (most + 1);
    }
  }
  return sizes;
}

TEST(VectorCube, StepsCarryTheIndicesBelowNWithTheirBit) {
  for (uint32_t nodes = 2; nodes <= 100; ++nodes) {
    for (uint32_t k = 0; k < BruckRounds(nodes); ++k) {
      uint32_t blocks = 0, final_slots = 0;
      for (uint32_t j = 1; j < nodes; ++j) {
        blocks += (j >> k) & 1;
        final_slots += (j >> k) == 1;
      }
      EXPECT_EQ(VectorCubeBlocksInStep(nodes, k), blocks) << nodes << " nodes, step " << k;
      EXPECT_LE(blocks, nodes / 2) << "a table of N/2 entries holds every step's";
      EXPECT_EQ(VectorCubeFinalSlots(nodes, k), final_slots) << nodes << " nodes, step " << k;
    }
  }
}

TEST(VectorCube, SlotsAndIndicesAreInverse) {
  for (uint32_t k = 0; k < 6; ++k) {
    for (uint32_t slot = 0; slot < 32; ++slot) {
      const uint32_t j = VectorCubeIndexAt(slot, k);
      EXPECT_NE(j & (1u << k), 0u);
      EXPECT_EQ(VectorCubeSlot(j, k), slot);
      if (slot > 0) EXPECT_GT(j, VectorCubeIndexAt(slot - 1, k)) << "increasing index order";
    }
  }
}

TEST(VectorCube, EveryBlockArrivesWhereItsReceiverLooksWhateverTheOrderOfLanding) {
  std::mt19937 rng(7);
  for (uint32_t nodes : {2u, 3u, 4u, 5u, 6u, 7u, 8u, 12u, 13u, 16u, 24u, 31u, 32u}) {
    for (int call = 0; call < 6; ++call) RunCall(nodes, RandomSizes(nodes, 300, &rng), nodes, true, &rng);
  }
}

TEST(VectorCube, EveryNodeLearnsTheWholeDigestAndAnyNodesVoid) {
  std::mt19937 rng(11);
  for (uint32_t nodes : {2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 12u, 16u, 17u}) {
    // A digest that does not sum to zero is seen as such by every node, and one that does as
    // zero (no node's share counted twice where the windows wrap around); so is one node's void,
    // whichever it is.
    RunCall(nodes, RandomSizes(nodes, 50, &rng), nodes, false, &rng);
    for (uint32_t v = 0; v < nodes; ++v) RunCall(nodes, RandomSizes(nodes, 50, &rng), v, true, &rng);
  }
}

TEST(VectorCube, ATableListingMoreThanItsInboxIsRefused) {
  const uint32_t nodes = 8;
  const uint64_t stride = 1024;
  VectorCubeInboxes inboxes;
  inboxes.Reset(nodes, stride);
  std::vector<uint8_t> inbox(stride, 0);
  EagerHeader h{kEagerHeaderMagic, 1, kVectorBytes, 0, 1, 0, 0, 0, {}};
  auto* table = reinterpret_cast<uint32_t*>(inbox.data() + kEagerHeaderBytes);
  const uint64_t room = stride - VectorCubeLineBytes(nodes);
  table[0] = static_cast<uint32_t>(room - 10);
  table[3] = 10;
  EXPECT_TRUE(inboxes.Land(0, h, inbox.data()));
  table[3] = 11;
  EXPECT_FALSE(inboxes.Land(0, h, inbox.data()));
  // No sum wraps around: one entry near 2^32 and another.
  table[0] = UINT32_MAX;
  table[3] = 2;
  EXPECT_FALSE(inboxes.Land(0, h, inbox.data()));
  // A void message's table is never read.
  h.flags = kEagerVectorCubeVoid;
  EXPECT_TRUE(inboxes.Land(0, h, inbox.data()));
}

TEST(VectorCube, TheSegmentHoldsTheLinesOfEveryStepForAnyPowerOfTwoOfNodesInTheGroup) {
  for (uint32_t group_size = 1; group_size <= 600; ++group_size) {
    for (uint32_t nodes = 2; nodes <= group_size; nodes *= 2) {
      EXPECT_LE(BruckRounds(nodes) * VectorCubeLineBytes(nodes), CubeOutBytes(group_size))
          << nodes << " nodes, group of " << group_size;
    }
  }
}

GroupShape ShapeOf(uint32_t nodes, uint32_t ppn) {
  std::vector<uint32_t> rank_node;
  for (uint32_t n = 0; n < nodes; ++n) rank_node.insert(rank_node.end(), ppn, n);
  return GroupShape::Make(nodes, rank_node).value();
}

TEST(VectorCube, TheCapIsTheTablesLargestHypercubeBlockWithinTheInboxes) {
  const InterNodeTable table = DefaultInterNodeTable();
  const EagerLayout big = PlanEagerLayout(ShapeOf(16, 2), 64 << 20, 64 << 20);
  // 16 x 2: the table runs blocks up to 8 KiB as a hypercube; 32 x 1 up to 16 KiB.
  EXPECT_EQ(VectorCubeBlockCap(ShapeOf(16, 2), big, table), 8192u);
  EXPECT_EQ(VectorCubeBlockCap(ShapeOf(32, 1), PlanEagerLayout(ShapeOf(32, 1), 64 << 20, 64 << 20), table), 16384u);
  // Not a power of two: the rotation, with the same cap; fewer nodes than the table's hypercube
  // rows: never.
  EXPECT_EQ(VectorCubeBlockCap(ShapeOf(12, 2), PlanEagerLayout(ShapeOf(12, 2), 64 << 20, 64 << 20), table), 8192u);
  EXPECT_EQ(VectorCubeBlockCap(ShapeOf(3, 2), PlanEagerLayout(ShapeOf(3, 2), 64 << 20, 64 << 20), table), 0u);
  EXPECT_EQ(VectorCubeBlockCap(ShapeOf(2, 2), PlanEagerLayout(ShapeOf(2, 2), 64 << 20, 64 << 20), table), 0u);
  // Small buffers: the inbox bounds it, so that 8 blocks behind a line fit an inbox.
  const GroupShape shape = ShapeOf(16, 2);
  const EagerLayout small = PlanEagerLayout(shape, 64 << 10, 64 << 10);
  const uint64_t cap = VectorCubeBlockCap(shape, small, table);
  const uint64_t stride = BruckInboxStride(16, small.srb_half);
  EXPECT_LT(cap, 8192u);
  EXPECT_GT(cap, 0u);
  EXPECT_LE(VectorCubeLineBytes(16) + 8 * cap, stride);
  EXPECT_GT(VectorCubeLineBytes(16) + 8 * (cap + 1), stride);
}

}  // namespace
}  // namespace ohio
