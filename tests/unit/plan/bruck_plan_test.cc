// The hypercube (Bruck) exchange among nodes, simulated end to end: every node's SSB filled
// with bytes that name their (source node, destination node, position), every round's
// messages gathered by the plan and landed in the receivers' inboxes, and at the end every
// node must find exactly what every other node sent it where the plan says, for every node
// count up to 40 (powers of two and not), uniform and uneven ranks per node.
#include "shm/plan/bruck_plan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "shm/plan/copy_plan.h"
#include "shm/plan/group_shape.h"
#include "tests/unit/plan/rank_maps.h"

namespace ohio {
namespace {

uint8_t Pattern(uint32_t source, uint32_t dest, uint64_t at) {
  return static_cast<uint8_t>(source * 131 + dest * 29 + at * 7 + 1);
}

// ppn of node n: `ppn_cycle` repeated over the nodes.
GroupShape Shape(uint32_t nodes, const std::vector<uint32_t>& ppn_cycle) {
  std::vector<uint32_t> rank_node;
  for (uint32_t n = 0; n < nodes; ++n) {
    for (uint32_t r = 0; r < ppn_cycle[n % ppn_cycle.size()]; ++r) rank_node.push_back(n);
  }
  return GroupShape::Make(nodes, rank_node).value();
}

struct Simulated {
  std::vector<uint64_t> frames_sent;  // per node
  std::vector<uint64_t> bytes_sent;   // per node
};

// A receive area every message of the call fits, headers included.
uint64_t AreaFor(const GroupShape& shape, uint64_t m) {
  return BruckRounds(shape.nodes()) * (2 * kBruckHeaderBytes + uint64_t{shape.nodes()} * m * shape.max_ppn() * shape.max_ppn());
}

// Runs every round of the plan over byte arrays standing for the nodes' SSBs and receive
// areas, checking each step against the plan's own sizes; then checks every arrival.
Simulated Simulate(const GroupShape& shape, uint64_t m) {
  const uint32_t n = shape.nodes();
  const uint64_t area_bytes = AreaFor(shape, m);
  if (n > 1) EXPECT_TRUE(FitsBruck(shape, m, area_bytes, uint64_t{shape.max_ppn()} * shape.size() * m));
  std::vector<std::vector<uint8_t>> ssb(n), area(n);
  for (uint32_t p = 0; p < n; ++p) {
    ssb[p].assign(SsbRoundBytes(shape, p, m), 0xEE);
    for (uint32_t d = 0; d < n; ++d) {
      const uint64_t at = SsbBlockOffset(shape, p, d, m);
      for (uint64_t b = 0; b < BlockBytes(shape, p, d, m); ++b) ssb[p][at + b] = Pattern(p, d, b);
    }
    area[p].assign(PlanBruckInboxes(shape, m, p, area_bytes).bytes, 0xEE);
  }
  Simulated sim{std::vector<uint64_t>(n, 0), std::vector<uint64_t>(n, 0)};
  for (uint32_t k = 0; k < BruckRounds(n); ++k) {
    // Gather every node's message before landing any: a round's sends read only inboxes of
    // earlier rounds, so the order inside a round must not matter.
    std::vector<std::vector<uint8_t>> messages(n);
    for (uint32_t i = 0; i < n; ++i) {
      for (const BruckPiece& piece : PlanBruckGather(shape, m, i, k, area_bytes)) {
        const std::vector<uint8_t>& from = piece.forwarded ? area[i] : ssb[i];
        EXPECT_LE(piece.offset + piece.bytes, from.size());
        messages[i].insert(messages[i].end(), from.begin() + piece.offset, from.begin() + piece.offset + piece.bytes);
      }
      const BruckMessage plan = PlanBruckMessage(shape, m, i, k);
      EXPECT_EQ(messages[i].size(), plan.bytes) << "node " << i << " round " << k;
      ++sim.frames_sent[i];
      sim.bytes_sent[i] += plan.bytes;
    }
    for (uint32_t i = 0; i < n; ++i) {
      const BruckMessage plan = PlanBruckMessage(shape, m, i, k);
      const BruckInboxes inboxes = PlanBruckInboxes(shape, m, plan.to, area_bytes);
      // The receiver expects this very sender in this round's inbox.
      EXPECT_EQ(BruckSenderTo(n, plan.to, k), i) << "nodes " << n << " round " << k;
      EXPECT_EQ(BruckRoundFrom(n, plan.to, i), k) << "nodes " << n << " sender " << i;
      EXPECT_EQ(inboxes.sizes[k], plan.bytes);
      // Behind its header, which sits where every node expects it whatever the M.
      EXPECT_EQ(inboxes.offsets[k], k * BruckInboxStride(n, area_bytes) + kBruckHeaderBytes);
      EXPECT_LE(inboxes.offsets[k] + plan.bytes, (k + 1) * BruckInboxStride(n, area_bytes));
      std::copy(messages[i].begin(), messages[i].end(), area[plan.to].begin() + inboxes.offsets[k]);
    }
  }
  for (uint32_t p = 0; p < n; ++p) {
    const std::vector<BruckArrival> arrivals = PlanBruckArrivals(shape, m, p, area_bytes);
    EXPECT_EQ(arrivals.size(), n - 1);
    std::vector<bool> seen(n, false);
    for (const BruckArrival& a : arrivals) {
      EXPECT_NE(a.source, p);
      EXPECT_FALSE(seen[a.source]);
      seen[a.source] = true;
      EXPECT_EQ(a.bytes, BlockBytes(shape, a.source, p, m));
      EXPECT_LT(a.round, BruckRounds(n));
      for (uint64_t b = 0; b < a.bytes; ++b) {
        if (area[p][a.offset + b] != Pattern(a.source, p, b)) {
          ADD_FAILURE() << "nodes " << n << " M " << m << ": node " << p << " byte " << b << " from node "
                        << a.source;
          return sim;
        }
      }
    }
  }
  return sim;
}

TEST(BruckPlan, RoundsAreCeilLog2) {
  const std::vector<std::pair<uint32_t, uint32_t>> expected = {{1, 0}, {2, 1}, {3, 2}, {4, 2},  {5, 3},
                                                               {8, 3}, {9, 4}, {13, 4}, {32, 5}, {33, 6}};
  for (auto [nodes, rounds] : expected) EXPECT_EQ(BruckRounds(nodes), rounds) << nodes;
}

// For a power of two every round pairs the nodes, so each connection used carries a message
// each way in that round; otherwise the rotation: node i sends to i + 2^k and hears from i - 2^k.
TEST(BruckPlan, APowerOfTwoPairsTheNodesEachRound) {
  for (uint32_t n : {2u, 4u, 8u, 16u, 32u, 64u}) {
    EXPECT_TRUE(BruckPairsNodes(n));
    const GroupShape shape = Shape(n, {1});
    for (uint32_t k = 0; k < BruckRounds(n); ++k) {
      for (uint32_t i = 0; i < n; ++i) {
        const uint32_t to = PlanBruckMessage(shape, 8, i, k).to;
        EXPECT_EQ(to, i ^ (1u << k));
        EXPECT_EQ(BruckSenderTo(n, i, k), to) << "nodes " << n << " node " << i << " round " << k;
        EXPECT_EQ(PlanBruckMessage(shape, 8, to, k).to, i);
      }
    }
  }
  for (uint32_t n : {3u, 5u, 6u, 13u, 31u}) {
    EXPECT_FALSE(BruckPairsNodes(n));
    const GroupShape shape = Shape(n, {1});
    for (uint32_t k = 0; k < BruckRounds(n); ++k) {
      for (uint32_t i = 0; i < n; ++i) {
        EXPECT_EQ(PlanBruckMessage(shape, 8, i, k).to, (i + (1u << k)) % n);
        EXPECT_EQ(BruckSenderTo(n, i, k), (i + n - (1u << k) % n) % n);
      }
    }
  }
  // A node that sends `node` nothing has no round.
  EXPECT_EQ(BruckRoundFrom(8, 0, 3), BruckRounds(8));
  EXPECT_EQ(BruckRoundFrom(8, 0, 0), BruckRounds(8));
  EXPECT_EQ(BruckRoundFrom(5, 0, 2), BruckRounds(5));
}

TEST(BruckPlan, EveryBlockArrivesForEveryNodeCountAndShape) {
  const std::vector<std::vector<uint32_t>> ppn_cycles = {{1}, {2}, {3, 1, 2}};
  for (uint32_t nodes = 2; nodes <= 40; ++nodes) {
    for (const auto& cycle : ppn_cycles) {
      for (uint64_t m : {uint64_t{1}, uint64_t{5}}) {
        const GroupShape shape = Shape(nodes, cycle);
        const Simulated sim = Simulate(shape, m);
        if (::testing::Test::HasFailure()) return;
        // One message per node per round, whatever N: the point of the algorithm.
        for (uint32_t i = 0; i < nodes; ++i) EXPECT_EQ(sim.frames_sent[i], BruckRounds(nodes));
      }
    }
  }
}

// What the forwarding costs: a block crosses the wire once per bit set in its distance, so
// the bytes all nodes send together are sum over pairs of block bytes x popcount(distance).
TEST(BruckPlan, BytesOnTheWireAreBlockTimesHops) {
  for (uint32_t nodes : {2u, 3u, 5u, 8u, 13u, 32u}) {
    const GroupShape shape = Shape(nodes, {2, 1});
    const uint64_t m = 3;
    uint64_t expected = 0;
    for (uint32_t s = 0; s < nodes; ++s) {
      for (uint32_t d = 0; d < nodes; ++d) {
        if (s != d) expected += BlockBytes(shape, s, d, m) * __builtin_popcount((d + nodes - s) % nodes);
      }
    }
    const Simulated sim = Simulate(shape, m);
    uint64_t sent = 0;
    for (uint64_t b : sim.bytes_sent) sent += b;
    EXPECT_EQ(sent, expected) << nodes << " nodes";
  }
}

// Every placement of up to 5 ranks on up to 5 nodes, ranks of a node not consecutive.
TEST(BruckPlan, EveryPlacementOfFewRanks) {
  for (const auto& map : testing_util::AllValidMaps(5, 5)) {
    const GroupShape shape = GroupShape::Make(map.nodes, map.rank_node).value();
    Simulate(shape, 2);
    if (::testing::Test::HasFailure()) return;
  }
}

// Own blocks are gathered straight from the SSB, the rest from the inboxes; in round 0
// nothing has been received yet, so everything comes from the SSB.
TEST(BruckPlan, RoundZeroGathersOnlyOwnBlocks) {
  const GroupShape shape = Shape(7, {2});
  for (uint32_t i = 0; i < 7; ++i) {
    for (const BruckPiece& p : PlanBruckGather(shape, 4, i, 0, AreaFor(shape, 4))) EXPECT_FALSE(p.forwarded);
    bool forwards = false;
    for (const BruckPiece& p : PlanBruckGather(shape, 4, i, 2, AreaFor(shape, 4))) forwards |= p.forwarded;
    EXPECT_TRUE(forwards) << "round 2 of 7 nodes forwards indices 3, 5 and 6";
  }
}

// The fit is decided from the group and the buffers alone, at the byte: 7 nodes x 2 ranks take
// 3 rounds, each carrying 3 blocks of M x 4 (indices 1,3,5; 2,3,6; 4,5,6), and each rank's row
// of 14 x M must fit its share of the SSB half.
TEST(BruckPlan, FitsAtTheByte) {
  const GroupShape shape = Shape(7, {2});
  const uint64_t m = 10;
  const uint64_t block = m * 2 * 2;
  const uint64_t ssb = 2 * 14 * m;
  // Three inboxes of header + 3 blocks each, 64-byte aligned.
  const uint64_t stride = (kBruckHeaderBytes + 3 * block + 63) / 64 * 64;
  EXPECT_TRUE(FitsBruck(shape, m, 3 * stride, ssb));
  EXPECT_FALSE(FitsBruck(shape, m + 1 + (stride - kBruckHeaderBytes - 3 * block) / 12, 3 * stride, ssb));
  EXPECT_FALSE(FitsBruck(shape, m, 3 * stride, ssb - 1));
  EXPECT_FALSE(FitsBruck(shape, m, 3 * kBruckHeaderBytes, ssb));
  EXPECT_TRUE(FitsBruck(shape, 0, 3 * kBruckHeaderBytes, 0));
}

}  // namespace
}  // namespace ohio
