#include "client/ohio_plan/plan_report.h"
#include "client/ohio_plan/internode_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace ohio {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::vector<Design> kDesigns = {Design::kV1, Design::kV2, Design::kV3, Design::kFlat};
const std::vector<Design> kNodeLevel = {Design::kV1, Design::kV2, Design::kV3};

// min_slice 0 unless a test says otherwise: every round carries a slice of every message, the
// plan whose figures the paper's formulas and most tests below describe.
PlanReport Plan(std::vector<uint32_t> ppn, uint64_t m, Design d, std::optional<uint64_t> ssb = std::nullopt,
                std::optional<uint64_t> srb = std::nullopt, bool every_node = false, uint64_t min_slice = 0) {
  PlanRequest req;
  // Pairwise whatever the call: these tests are about staging, whose figures the paper gives;
  // the inter-node table's choice is tested on its own (InterNodeChoiceFollowsTheTable).
  req.internode_table = InterNodeTable{};
  req.min_slice_bytes = min_slice;
  req.ppn = std::move(ppn);
  req.bytes_per_rank = m;
  req.design = d;
  req.ssb_bytes = ssb;
  req.srb_bytes = srb;
  req.every_node = every_node;
  Result<PlanReport> r = MakePlanReport(req);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r.value() : PlanReport{};
}

std::string Name(uint32_t n, uint32_t ppn, uint64_t m, Design d) {
  return std::to_string(n) + " nodes x " + std::to_string(ppn) + " ppn, M " + std::to_string(m) + ", " +
         DesignName(d);
}

// The paper's Table III, with unbounded memory (one round, nothing chunked):
//   QPs per node: N-1 for V1, V2, V3 (flat: a QP per pair of a local and a remote rank);
//   posted sends per node: V1 (N-1)*PPN, V2 and V3 N-1; ohio's V1 posts its PPN rows to one
//   node as a single gather (one work request, PPN pieces), so it too posts N-1;
//   memory: SSB M*N*PPN^2 for all three; SRB V1/V2 M*(N-1)*PPN^2 (every remote block), V3
//   2*M*PPN^2 (two block-sized halves).
// So V1/V2 take 2*M*N*PPN^2 less the node's own block, which never crosses the SRB: the
// table's 2*M*N*PPN^2 counts it. V3 takes M*N*PPN^2 + 2*M*PPN^2 = M*(N+2)*PPN^2; the table's
// "(M+2)*N*PPN^2" adds 2 bytes rather than two blocks, a misplaced parenthesis for the same sum.
TEST(PlanReport, TableThreeUnbounded) {
  for (uint32_t n : {2u, 3u, 4u, 8u, 16u, 128u}) {
    for (uint32_t ppn : {1u, 2u, 4u, 56u}) {
      for (uint64_t m : {uint64_t{1}, uint64_t{8}, uint64_t{4096}, uint64_t{1} << 20}) {
        for (Design d : kDesigns) {
          SCOPED_TRACE(Name(n, ppn, m, d));
          const PlanReport r = Plan(std::vector<uint32_t>(n, ppn), m, d);
          ASSERT_EQ(r.nodes.size(), n);
          const uint64_t pairs = uint64_t{ppn} * ppn;
          const uint64_t remote_pairs = (n - 1) * pairs;
          for (const NodePlan& p : r.nodes) {
            EXPECT_EQ(p.ppn, ppn);
            EXPECT_EQ(p.rounds, 1u);
            EXPECT_EQ(p.bytes_on_wire, m * remote_pairs);
            switch (d) {
              case Design::kV1:
              case Design::kV3:
                EXPECT_EQ(p.connections, n - 1);
                EXPECT_EQ(p.sends, n - 1);
                break;
              case Design::kFlat:
                EXPECT_EQ(p.connections, remote_pairs);
                EXPECT_EQ(p.sends, remote_pairs);
                break;
            }
            if (d == Design::kFlat) {
              EXPECT_EQ(p.ssb_bytes, 0u);
              EXPECT_EQ(p.srb_bytes, 0u);
              continue;
            }
            EXPECT_EQ(p.ssb_bytes, m * n * pairs);
            EXPECT_EQ(p.srb_bytes, d == Design::kV3 ? 2 * m * pairs : m * remote_pairs);
            const uint64_t total = p.ssb_bytes + p.srb_bytes;
            EXPECT_EQ(total, d == Design::kV3 ? m * (n + 2) * pairs : 2 * m * n * pairs - m * pairs);
          }
          EXPECT_TRUE(r.max.SameFigures(r.nodes[0]));
        }
      }
    }
  }
}

TEST(PlanReport, OneNodeHasNoConnectionsNorSends) {
  for (Design d : kDesigns) {
    SCOPED_TRACE(DesignName(d));
    const PlanReport r = Plan({4}, 4096, d);
    ASSERT_EQ(r.nodes.size(), 1u);
    EXPECT_EQ(r.nodes[0].connections, 0u);
    EXPECT_EQ(r.nodes[0].sends, 0u);
    EXPECT_EQ(r.nodes[0].srb_bytes, 0u);
    EXPECT_EQ(r.nodes[0].bytes_on_wire, 0u);
    EXPECT_EQ(r.nodes[0].ssb_bytes, d == Design::kFlat ? 0u : 4u * 4 * 4096);
  }
}

TEST(PlanReport, ZeroBytesIsOneEmptyRound) {
  for (Design d : kNodeLevel) {
    SCOPED_TRACE(DesignName(d));
    const PlanReport r = Plan({2, 2, 2}, 0, d);
    for (const NodePlan& p : r.nodes) {
      EXPECT_EQ(p.rounds, 1u);
      EXPECT_EQ(p.ssb_bytes, 0u);
      EXPECT_EQ(p.srb_bytes, 0u);
      EXPECT_EQ(p.bytes_on_wire, 0u);
      EXPECT_EQ(p.sends, 2u);
    }
  }
}

// With the daemons' buffers an eager call of 8 nodes x 1 rank at 64 bytes runs the hypercube of
// the built-in table: 3 messages a node, 12 blocks sent (1+1+2+1+2+2+3 bits over distances 1-7);
// with no table row, pairwise's 7.
TEST(PlanReport, InterNodeChoiceFollowsTheTable) {
  PlanRequest req;
  req.ppn = std::vector<uint32_t>(8, 1);
  req.bytes_per_rank = 64;
  req.ssb_bytes = 16u << 20;
  req.srb_bytes = 8u << 20;
  Result<PlanReport> cube = MakePlanReport(req);
  ASSERT_TRUE(cube.ok());
  EXPECT_EQ(cube->internode, InterNodeAlgorithm::kHypercube);
  EXPECT_EQ(cube->max.sends, 3u);
  EXPECT_EQ(cube->max.bytes_on_wire, 12u * 64);
  req.internode_table = InterNodeTable{};
  Result<PlanReport> pairwise = MakePlanReport(req);
  ASSERT_TRUE(pairwise.ok());
  EXPECT_EQ(pairwise->internode, InterNodeAlgorithm::kPairwise);
  EXPECT_EQ(pairwise->max.sends, 7u);
  EXPECT_EQ(pairwise->max.bytes_on_wire, 7u * 64);
}

// Bounds stand for ohiod's ssb_bytes / srb_bytes: whatever N and M, a round fits them; what
// gives is the number of rounds and, for v3, of chunks; the bytes on the wire do not change.
TEST(PlanReport, BoundedMemoryStaysWithinBoundsAndCostsSends) {
  struct Bounds {
    uint64_t ssb, srb;
  };
  const std::vector<Bounds> bounds = {{16u << 20, 8u << 20}, {1u << 20, 256u << 10}, {256u << 10, 64u << 10}};
  for (uint32_t n : {2u, 3u, 8u, 16u}) {
    for (uint32_t ppn : {1u, 4u, 16u}) {
      for (uint64_t m : {uint64_t{4096}, uint64_t{1} << 20}) {
        for (Design d : kNodeLevel) {
          const PlanReport free = Plan(std::vector<uint32_t>(n, ppn), m, d);
          for (const Bounds& b : bounds) {
            SCOPED_TRACE(Name(n, ppn, m, d) + " ssb " + std::to_string(b.ssb) + " srb " + std::to_string(b.srb));
            const PlanReport r = Plan(std::vector<uint32_t>(n, ppn), m, d, b.ssb, b.srb);
            ASSERT_EQ(r.nodes.size(), n);
            const bool fits = free.max.ssb_bytes <= b.ssb && free.max.srb_bytes <= b.srb;
            for (size_t i = 0; i < n; ++i) {
              const NodePlan& p = r.nodes[i];
              const NodePlan& u = free.nodes[i];
              EXPECT_LE(p.ssb_bytes, b.ssb);
              EXPECT_LE(p.srb_bytes, b.srb);
              EXPECT_EQ(p.connections, u.connections);
              EXPECT_EQ(p.bytes_on_wire, u.bytes_on_wire);
              EXPECT_GE(p.rounds, u.rounds);
              EXPECT_GE(p.sends, u.sends);
              if (fits) {
                EXPECT_TRUE(p.SameFigures(u));
              } else {
                EXPECT_GT(p.sends, u.sends);
              }
              // v1/v2 never chunk: every round posts the puts of the one unbounded round.
              if (d != Design::kV3) {
                EXPECT_EQ(p.sends, p.rounds * u.sends);
              }
            }
          }
        }
      }
    }
  }
}

TEST(PlanReport, V3ChunksWhatTheSrbCannotHoldInOneRound) {
  // 4 nodes x 4 ranks x 4 KiB: blocks of 64 KiB, halves of 8 KiB -> 8 chunks per block.
  const PlanReport r = Plan({4, 4, 4, 4}, 4096, Design::kV3, std::nullopt, 16u << 10);
  for (const NodePlan& p : r.nodes) {
    EXPECT_EQ(p.rounds, 1u);
    EXPECT_EQ(p.sends, 3u * 8);
    EXPECT_EQ(p.srb_bytes, 16u << 10);
    EXPECT_EQ(p.ssb_bytes, 4096u * 16 * 4);
  }
}

TEST(PlanReport, DefaultDaemonMemoryAt128By56) {
  const PlanReport r = Plan(std::vector<uint32_t>(128, 56), 1u << 20, Design::kV3, 16u << 20, 8u << 20);
  ASSERT_EQ(r.nodes.size(), 128u);
  // 56 x 7168 messages: 41 bytes of each fit 16 MiB, so 1 MiB takes ceil(2^20 / 41) rounds.
  EXPECT_EQ(r.slice, 41u);
  EXPECT_EQ(r.max.rounds, (uint64_t{1} << 20) / 41 + 1);
  EXPECT_EQ(r.max.connections, 127u);
  EXPECT_EQ(r.max.sends, 127u * r.max.rounds);
  EXPECT_EQ(r.max.ssb_bytes, 56u * 7168 * 41);
  EXPECT_EQ(r.max.srb_bytes, 2u * 56 * 56 * 41);
  EXPECT_EQ(r.max.bytes_on_wire, (uint64_t{1} << 20) * 56 * 56 * 127);
}

// With ohiod's default minimum slice the same call copies whole slices of at least
// 4 KiB. 56 rows x 56 ranks of one node fit 16 MiB in slices of 5312 B (198 slices of 1 MiB),
// 28 rows in slices of 10688 B (99 slices): 128 x 198 = 128 x 2 x 99 = 25344 rounds either
// way, and the longer slice wins. Before, a rank copied one message of 41 B in and out per
// rank of the group every round (7168 + 7168); now one per rank of the node a round reaches,
// and one per source row of the node it hears from (plus one where a chunk boundary cuts one).
TEST(PlanReport, DefaultDaemonMemoryAt128By56WithMinimumSlice) {
  const PlanReport before = Plan(std::vector<uint32_t>(128, 56), 1u << 20, Design::kV3, 16u << 20, 8u << 20);
  EXPECT_EQ(before.max.copies_per_round, 2u * 7168);
  EXPECT_EQ(before.max.copies, 2u * 7168 * before.max.rounds);
  const PlanReport r = Plan(std::vector<uint32_t>(128, 56), 1u << 20, Design::kV3, 16u << 20, 8u << 20, false,
                            kDefaultMinSliceBytes);
  ASSERT_EQ(r.nodes.size(), 128u);
  EXPECT_EQ(r.slice, 10688u);
  EXPECT_EQ(r.staging.rows, 28u);
  EXPECT_EQ(r.staging.steps, 1u);
  EXPECT_EQ(r.max.rounds, 128u * 2 * 99);
  EXPECT_LE(r.max.rounds, before.max.rounds);
  // A round carries 28 x 56 slices to one node: 16.7 MB, in four deliveries of a 4 MiB half.
  const uint64_t block = 28u * 56 * 10688;
  EXPECT_EQ(r.max.ssb_bytes, block);
  EXPECT_EQ(r.max.srb_bytes, 8u << 20);
  // 127 of a slice's 128 step groups reach another node: 4 chunks a block, 1 in the last
  // slice (1152 B: a block of 1.8 MB).
  EXPECT_EQ(r.max.sends, 98u * 2 * 127 * 4 + 1u * 2 * 127 * 1);
  EXPECT_LE(r.max.copies_per_round, 56u + 28 + 3);
  EXPECT_GE(r.max.copies_per_round, 56u + 28);
  EXPECT_LT(r.max.copies * 100, before.max.copies);
  EXPECT_EQ(r.max.connections, 127u);
  EXPECT_EQ(r.max.bytes_on_wire, before.max.bytes_on_wire);
}

// Whatever the shape and buffers, a minimum slice changes how rounds are cut, never what
// crosses the wire nor the buffers' bounds; slices are at least the minimum (or all of M) once
// the SSB holds max PPN of them.
TEST(PlanReport, MinimumSliceKeepsBoundsAndBytes) {
  for (uint32_t n : {2u, 3u, 8u, 16u}) {
    for (uint32_t ppn : {1u, 4u, 16u}) {
      for (uint64_t m : {uint64_t{100}, uint64_t{4096}, uint64_t{1} << 20}) {
        for (Design d : kNodeLevel) {
          const std::vector<std::pair<uint64_t, uint64_t>> buffers = {{16u << 20, 8u << 20}, {256u << 10, 64u << 10}};
          for (auto [ssb, srb] : buffers) {
            SCOPED_TRACE(Name(n, ppn, m, d) + " ssb " + std::to_string(ssb) + " srb " + std::to_string(srb));
            const PlanReport old = Plan(std::vector<uint32_t>(n, ppn), m, d, ssb, srb);
            const PlanReport r = Plan(std::vector<uint32_t>(n, ppn), m, d, ssb, srb, false, kDefaultMinSliceBytes);
            if (uint64_t{ppn} * kDefaultMinSliceBytes <= srb / 2) {
              EXPECT_GE(r.slice, std::min<uint64_t>(m, kDefaultMinSliceBytes));
            }
            for (size_t i = 0; i < n; ++i) {
              EXPECT_LE(r.nodes[i].ssb_bytes, ssb);
              EXPECT_LE(r.nodes[i].srb_bytes, srb);
              EXPECT_EQ(r.nodes[i].bytes_on_wire, old.nodes[i].bytes_on_wire);
              EXPECT_LE(r.nodes[i].copies_per_round, old.nodes[i].copies_per_round);
            }
          }
        }
      }
    }
  }
}

TEST(PlanReport, UnevenThreeOneTwo) {
  // Ranks 0-2 on node 0, 3 on node 1, 4-5 on node 2: P = 6.
  const PlanReport v3 = Plan({3, 1, 2}, 64, Design::kV3);
  ASSERT_EQ(v3.nodes.size(), 3u);
  const uint64_t ssb[] = {3 * 6 * 64, 1 * 6 * 64, 2 * 6 * 64};
  // Largest received block: node 0 from node 2 (2x3), node 1 from node 0 (3x1), node 2 from node 0 (3x2).
  const uint64_t v3_srb[] = {2 * 6 * 64, 2 * 3 * 64, 2 * 6 * 64};
  const uint64_t wire[] = {3 * 3 * 64, 1 * 5 * 64, 2 * 4 * 64};
  for (uint32_t n = 0; n < 3; ++n) {
    SCOPED_TRACE("node " + std::to_string(n));
    EXPECT_EQ(v3.nodes[n].node, n);
    EXPECT_EQ(v3.nodes[n].connections, 2u);
    EXPECT_EQ(v3.nodes[n].sends, 2u);
    EXPECT_EQ(v3.nodes[n].ssb_bytes, ssb[n]);
    EXPECT_EQ(v3.nodes[n].srb_bytes, v3_srb[n]);
    EXPECT_EQ(v3.nodes[n].bytes_on_wire, wire[n]);
  }
  EXPECT_EQ(v3.max.ssb_bytes, ssb[0]);
  EXPECT_EQ(v3.max.srb_bytes, 2u * 6 * 64);
  EXPECT_EQ(v3.max.bytes_on_wire, wire[0]);
  EXPECT_EQ(v3.max.ppn, 3u);

  const PlanReport v1 = Plan({3, 1, 2}, 64, Design::kV1);
  for (uint32_t n = 0; n < 3; ++n) {
    EXPECT_EQ(v1.nodes[n].sends, 2u) << "one gather per peer node, whatever the node's ranks";
    EXPECT_EQ(v1.nodes[n].srb_bytes, wire[n]) << "node " << n << " receives what it sends";
  }

  const PlanReport flat = Plan({3, 1, 2}, 64, Design::kFlat);
  const uint64_t flat_connections[] = {3 * 3, 1 * 5, 2 * 4};
  for (uint32_t n = 0; n < 3; ++n) EXPECT_EQ(flat.nodes[n].connections, flat_connections[n]);
  EXPECT_EQ(flat.max.connections, 9u);

  // An SSB of 1000 bytes: 55 bytes of each of node 0's 18 messages, so 64 bytes take two
  // rounds; SRB halves of 64 bytes chunk every block of the first round.
  const PlanReport b = Plan({3, 1, 2}, 64, Design::kV3, 1000, 128);
  EXPECT_EQ(b.slice, 55u);
  // Blocks of 165/330 B (node 0), 165/110 (node 1), 330/110 (node 2) in 64 B chunks, then 9 B slices.
  const uint64_t chunked_sends[] = {(3 + 6) + (1 + 1), (3 + 2) + (1 + 1), (6 + 2) + (1 + 1)};
  for (uint32_t n = 0; n < 3; ++n) {
    EXPECT_EQ(b.nodes[n].rounds, 2u);
    EXPECT_EQ(b.nodes[n].sends, chunked_sends[n]) << "node " << n;
    EXPECT_LE(b.nodes[n].ssb_bytes, 1000u);
    EXPECT_EQ(b.nodes[n].srb_bytes, 128u);
    EXPECT_EQ(b.nodes[n].bytes_on_wire, wire[n]);
  }
}

// MakePlanReport plans one node per distinct PPN; planning every node must agree.
TEST(PlanReport, OneNodePerPpnEqualsEveryNode) {
  const std::vector<std::vector<uint32_t>> shapes = {{3, 1, 2}, {1, 2, 3, 4, 5}, {5, 5, 1, 5, 2, 2, 7},
                                                     {2, 2, 2, 2, 2, 2}, {4, 1, 4, 1, 4, 1, 4, 1}};
  for (const auto& ppn : shapes) {
    for (Design d : kDesigns) {
      for (uint64_t m : {uint64_t{0}, uint64_t{100}, uint64_t{4096}}) {
        for (auto [ssb, srb] : std::vector<std::pair<std::optional<uint64_t>, std::optional<uint64_t>>>{
                 {std::nullopt, std::nullopt}, {8192, 4096}, {std::nullopt, 256}, {4096, std::nullopt}}) {
          SCOPED_TRACE(std::to_string(ppn.size()) + " nodes " + DesignName(d) + " M " + std::to_string(m) + " ssb " +
                       std::to_string(ssb.value_or(0)) + " srb " + std::to_string(srb.value_or(0)));
          const PlanReport some = Plan(ppn, m, d, ssb, srb);
          const PlanReport all = Plan(ppn, m, d, ssb, srb, true);
          ASSERT_EQ(some.nodes.size(), all.nodes.size());
          for (size_t n = 0; n < all.nodes.size(); ++n) {
            EXPECT_EQ(some.nodes[n].node, n);
            EXPECT_TRUE(some.nodes[n].SameFigures(all.nodes[n])) << "node " << n;
          }
        }
      }
    }
  }
}

TEST(PlanReport, PlannerRefusalsAreErrors) {
  PlanRequest req;
  req.ppn = {4, 4};
  req.bytes_per_rank = 4096;
  req.design = Design::kV3;
  req.ssb_bytes = 31;  // 4 x 8 messages need 32 bytes
  Result<PlanReport> r = MakePlanReport(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNoMemory);
  EXPECT_THAT(r.status().message(), HasSubstr("SSB of 31 bytes"));

  req.ssb_bytes.reset();
  req.srb_bytes = 127;
  r = MakePlanReport(req);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("SRB of 127 bytes"));

  req.design = Design::kV2;
  req.srb_bytes = 15;  // 4 x 4 remote messages
  r = MakePlanReport(req);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("16 remote messages"));
}

TEST(PlanReport, GroupsOutOfRangeAreInvalid) {
  for (const auto& ppn : std::vector<std::vector<uint32_t>>{
           {}, {1, 0, 2}, {kMaxPlanPpn + 1}, std::vector<uint32_t>(kMaxPlanNodes + 1, 1)}) {
    PlanRequest req;
    req.ppn = ppn;
    req.bytes_per_rank = 1;
    Result<PlanReport> r = MakePlanReport(req);
    ASSERT_FALSE(r.ok()) << ppn.size() << " nodes";
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  }
  PlanRequest huge;
  huge.ppn = {4, 4};
  huge.bytes_per_rank = uint64_t{1} << 60;
  Result<PlanReport> r = MakePlanReport(huge);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("2^62"));
}

TEST(PpnInput, Uniform) {
  Result<std::vector<uint32_t>> r = UniformPpn(3, 56);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), std::vector<uint32_t>(3, 56));
  for (auto [n, p] : std::vector<std::pair<uint64_t, uint64_t>>{{0, 4}, {4, 0}, {0, 0}}) {
    Result<std::vector<uint32_t>> bad = UniformPpn(n, p);
    ASSERT_FALSE(bad.ok());
    EXPECT_THAT(bad.status().message(), HasSubstr("no ranks"));
  }
  EXPECT_FALSE(UniformPpn(kMaxPlanNodes + 1, 1).ok());
  EXPECT_FALSE(UniformPpn(2, kMaxPlanPpn + 1).ok());
  EXPECT_FALSE(UniformPpn(uint64_t{1} << 40, 1).ok());
}

TEST(PpnInput, List) {
  Result<std::vector<uint32_t>> r = ParsePpnList("3,1,2");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value(), (std::vector<uint32_t>{3, 1, 2}));
  ASSERT_TRUE(ParsePpnList("7").ok());
  EXPECT_EQ(ParsePpnList("007").value(), std::vector<uint32_t>{7});
  for (const char* bad : {"", ",", "3,", ",3", "3,,1", "3,x", "3;1", "-1", "3, 1", "0", "3,0", "1025",
                          "99999999999999999999999"}) {
    Result<std::vector<uint32_t>> b = ParsePpnList(bad);
    EXPECT_FALSE(b.ok()) << "'" << bad << "'";
    if (!b.ok()) {
      EXPECT_EQ(b.status().code(), Code::kInvalidArgument);
    }
  }
}

TEST(Designs, NamesRoundTrip) {
  for (Design d : kDesigns) EXPECT_EQ(ParseDesign(DesignName(d)), d);
  EXPECT_FALSE(ParseDesign("v4").has_value());
  EXPECT_FALSE(ParseDesign("V3").has_value());
}

// The value of "key": after `from` in a JSON text of numbers, or nullopt.
std::optional<uint64_t> JsonNumber(const std::string& json, const std::string& key, size_t from = 0) {
  const std::string quoted = "\"" + key + "\":";
  const size_t at = json.find(quoted, from);
  if (at == std::string::npos) return std::nullopt;
  return std::strtoull(json.c_str() + at + quoted.size(), nullptr, 10);
}

// The top-level keys follow the per_node array.
size_t AfterPerNode(const std::string& json) { return json.find("]", json.find("\"per_node\"")); }

TEST(Render, JsonListsEveryNodeAndTheMaxima) {
  const PlanReport r = Plan({3, 1, 2}, 64, Design::kV1);
  const std::string json = RenderJson(r);
  EXPECT_THAT(json, HasSubstr("\"nodes\":3,"));
  EXPECT_THAT(json, HasSubstr("\"ppn\":[3,1,2]"));
  EXPECT_THAT(json, HasSubstr("\"algo\":\"v1\""));
  EXPECT_THAT(json, HasSubstr("\"ssb_limit\":null"));
  size_t nodes = 0;
  for (size_t at = json.find("{\"node\":"); at != std::string::npos; at = json.find("{\"node\":", at + 1)) ++nodes;
  EXPECT_EQ(nodes, 3u);
  const size_t top = AfterPerNode(json);
  ASSERT_NE(top, std::string::npos);
  EXPECT_EQ(JsonNumber(json, "connections_per_node", top), 2u);
  EXPECT_EQ(JsonNumber(json, "sends_per_node", top), 2u);
  EXPECT_EQ(JsonNumber(json, "ssb_bytes", top), 3u * 6 * 64);
  EXPECT_EQ(JsonNumber(json, "srb_bytes", top), 3u * 3 * 64);
  // Balanced, and no trailing comma before a closing bracket.
  int depth = 0;
  for (char c : json) depth += c == '{' || c == '[' ? 1 : c == '}' || c == ']' ? -1 : 0;
  EXPECT_EQ(depth, 0);
  EXPECT_EQ(json.find(",}"), std::string::npos);
  EXPECT_EQ(json.find(",]"), std::string::npos);
}

TEST(Render, TextFoldsEqualNodes) {
  const std::string folded = RenderText(Plan(std::vector<uint32_t>(8, 4), 4096, Design::kV3), false);
  EXPECT_THAT(folded, HasSubstr("\n0-7 "));
  EXPECT_THAT(folded, HasSubstr("8 nodes x 4 ranks per node = 32 ranks"));
  const std::string each = RenderText(Plan(std::vector<uint32_t>(8, 4), 4096, Design::kV3), true);
  EXPECT_THAT(each, HasSubstr("\n7 "));
  EXPECT_EQ(each.find("0-7"), std::string::npos);
  const std::string uneven = RenderText(Plan({3, 1, 2}, 64, Design::kV3, 1000, 128), false);
  EXPECT_THAT(uneven, HasSubstr("\nmax "));
  EXPECT_THAT(uneven, HasSubstr("2 rounds of 55 B"));
}

// Uneven nodes: the block is M x max ppn squared, and the bytes the most any node sends.
TEST(InterNodeReport, UnevenGroupBelowTheDefaultRowsMinimumRunsPairwise) {
  auto e = ExplainInterNodeAlgorithm(DefaultInterNodeTable(), {3, 1, 2}, 10);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->block_bytes, 90u);
  EXPECT_EQ(e->row, -1);  // 3 nodes: the default rows start at 4
  EXPECT_EQ(e->choice.runs, InterNodeAlgorithm::kPairwise);
  ASSERT_EQ(e->costs.size(), 3u);
  // Node 0 sends 10 x 3 x 3 bytes to the other nodes' 3 ranks; the hypercube on 3 nodes
  // forwards nothing (index 2 is still the sender's own block in round 1).
  const std::vector<std::vector<uint64_t>> want = {{2, 2, 90}, {2, 2, 90}, {2, 1, 90}};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(e->costs[i].messages, want[i][0]) << InterNodeAlgorithmName(e->costs[i].internode);
    EXPECT_EQ(e->costs[i].steps, want[i][1]) << InterNodeAlgorithmName(e->costs[i].internode);
    EXPECT_EQ(e->costs[i].bytes, want[i][2]) << InterNodeAlgorithmName(e->costs[i].internode);
  }
  // 5 nodes of 1..5 ranks: 16 bytes x 25 = 400 <= 8 KiB, so the hypercube (3 messages), by the
  // second row (the first is for 32 nodes and more).
  auto h = ExplainInterNodeAlgorithm(DefaultInterNodeTable(), {1, 2, 3, 4, 5}, 16);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->row, 1);
  EXPECT_EQ(h->choice.runs, InterNodeAlgorithm::kHypercube);
  EXPECT_EQ(h->costs[1].messages, 3u);
  EXPECT_FALSE(ExplainInterNodeAlgorithm(DefaultInterNodeTable(), {4}, 1).ok());
}

// The table's hypercube runs only where the round fits it (shm/plan/eager_plan.h RoundInterNodeAlgorithm): the
// explanation says what runs and why, and agrees with the plan (and so with the daemon) on it.
TEST(InterNodeReport, ChosenIsWhatRunsWhenTheTablesHypercubeDoesNotFit) {
  struct Case {
    uint64_t m;
    InterNodeBuffers buffers;
    InterNodeAlgorithm runs;
    HypercubeMiss miss;
  };
  const std::vector<Case> cases = {
      {64, {}, InterNodeAlgorithm::kHypercube, HypercubeMiss::kNone},
      {64, {NodeLevelDesign::kV1}, InterNodeAlgorithm::kPairwise, HypercubeMiss::kV1Layout},
      {64, {NodeLevelDesign::kV3, 16u << 20, 4u << 10}, InterNodeAlgorithm::kPairwise, HypercubeMiss::kInboxTooSmall},
      {1024, {NodeLevelDesign::kV3, 16u << 20, 16u << 10}, InterNodeAlgorithm::kPairwise, HypercubeMiss::kNotEager},
  };
  const std::vector<uint32_t> ppn(8, 2);
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.m) + " B, " + NodeLevelDesignName(c.buffers.algo) + ", srb " +
                 std::to_string(c.buffers.srb_bytes));
    auto e = ExplainInterNodeAlgorithm(DefaultInterNodeTable(), ppn, c.m, c.buffers);
    ASSERT_TRUE(e.ok()) << e.status().message();
    EXPECT_EQ(e->row, 1);  // 8 nodes: the second row
    EXPECT_EQ(e->choice.table, InterNodeAlgorithm::kHypercube);
    EXPECT_EQ(e->choice.runs, c.runs);
    EXPECT_EQ(e->choice.miss, c.miss);
    PlanRequest req;
    req.ppn = ppn;
    req.bytes_per_rank = c.m;
    req.design = c.buffers.algo == NodeLevelDesign::kV1 ? Design::kV1 : Design::kV3;
    req.ssb_bytes = c.buffers.ssb_bytes;
    req.srb_bytes = c.buffers.srb_bytes;
    auto plan = MakePlanReport(req);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    EXPECT_EQ(plan->internode, c.runs);
  }
}

// The built binary, as a user runs it.
struct BinaryRun {
  int exit_code;
  std::string output;
};

BinaryRun OhioPlan(const std::string& args) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  const std::string bin = srcdir != nullptr && workspace != nullptr
                              ? std::string(srcdir) + "/" + workspace + "/client/ohio-plan"
                              : "client/ohio-plan";
  FILE* p = popen((bin + " " + args + " 2>&1").c_str(), "r");
  BinaryRun run{-1, ""};
  if (p == nullptr) return run;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) run.output.append(buf, n);
  const int status = pclose(p);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

TEST(OhioPlanBinary, JsonAt128By56) {
  const BinaryRun run = OhioPlan("--nodes 128 --ppn 56 --bytes 1MiB --algo v3 --ssb-bytes 16MiB --srb-bytes 8MiB --json");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const size_t top = AfterPerNode(run.output);
  ASSERT_NE(top, std::string::npos) << run.output;
  EXPECT_EQ(JsonNumber(run.output, "connections_per_node", top), 127u);
  const std::optional<uint64_t> sends = JsonNumber(run.output, "sends_per_node", top);
  const std::optional<uint64_t> ssb = JsonNumber(run.output, "ssb_bytes", top);
  const std::optional<uint64_t> srb = JsonNumber(run.output, "srb_bytes", top);
  ASSERT_TRUE(sends && ssb && srb) << run.output;
  EXPECT_GT(*sends, 127u);
  EXPECT_LE(*ssb, 16u << 20);
  EXPECT_LE(*srb, 8u << 20);
  EXPECT_THAT(run.output, HasSubstr("{\"node\":127,"));
}

TEST(OhioPlanBinary, TableThreeText) {
  const BinaryRun v1 = OhioPlan("--nodes 4 --ppn 2 --bytes 4096 --algo v1");
  ASSERT_EQ(v1.exit_code, 0) << v1.output;
  EXPECT_THAT(v1.output, HasSubstr("0-3"));
  const BinaryRun uneven = OhioPlan("--ppn-list 3,1,2 --bytes 64 --algo flat --json");
  ASSERT_EQ(uneven.exit_code, 0) << uneven.output;
  EXPECT_EQ(JsonNumber(uneven.output, "connections_per_node", AfterPerNode(uneven.output)), 9u);
}

TEST(OhioPlanBinary, BadInputExitsTwoWithAMessage) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--nodes 4 --ppn 2 --bytes 1 --algo v3 --frobnicate", "--frobnicate"},
      {"--nodes 4 --ppn 2 --bytes 1 --algo v4", "--design: v4 not in"},  // --algo: the former name
      {"--nodes 4 --ppn 2 --bytes 1 --design v4", "--design: v4 not in"},
      {"--nodes 4 --ppn 2 --algo v3", "--bytes"},
      {"--nodes 0 --ppn 2 --bytes 1 --algo v3", "no ranks"},
      {"--nodes 4 --ppn 0 --bytes 1 --algo v3", "no ranks"},
      {"--nodes 4 --bytes 1 --algo v3", "--ppn"},
      {"--nodes -1 --ppn 2 --bytes 1 --algo v3", "--nodes"},
      {"--nodes 4 --ppn 2 --bytes=-1 --algo v3", "--bytes"},
      {"--ppn-list 3,x --bytes 1 --algo v3", "not a number"},
      {"--nodes 4 --ppn 2 --bytes 1 --algo v3 --ssb-bytes 10", "SSB of 10 bytes"},
      {"--nodes 4 --ppn 2 --bytes 1 --algo v3 --srb-bytes 100", "SRB of 100 bytes"},
      {"--nodes 4 --ppn 2 --bytes 1", "--algo is required"},
      {"--nodes 4 --ppn 2 --bytes 1 --explain --json", "excludes"},
      {"--nodes 1 --ppn 2 --bytes 1 --explain", "--explain needs 2 nodes or more"},
      {"--nodes 4 --ppn 2 --bytes 1 --explain --internode-table /nonexistent/t", "cannot read inter-node table /nonexistent/t"},
      {"--queue-pairs", "--queue-pairs needs --nodes from 1 to 1048576"},
      {"--queue-pairs --nodes 2000000", "--queue-pairs needs --nodes from 1 to 1048576"},
      {"--queue-pairs --nodes 16 --rc-pool -1", "--rc-pool is a number of queue pairs or 'unlimited', not '-1'"},
      {"--queue-pairs --nodes 16 --rails 0", "--rails must be from 1 to 64"},
      {"--queue-pairs --nodes 16 --json", "excludes"},
  };
  for (const auto& [args, says] : cases) {
    const BinaryRun run = OhioPlan(args);
    EXPECT_EQ(run.exit_code, 2) << args << "\n" << run.output;
    EXPECT_THAT(run.output, HasSubstr(says)) << args;
  }
}

// --queue-pairs: one RC queue pair per peer against the pool, per node and rail, at 4,096 nodes.
TEST(OhioPlanBinary, QueuePairsWithAndWithoutThePool) {
  const BinaryRun run = OhioPlan("--queue-pairs --nodes 4096");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("queue pairs per node: 4096 nodes, 1 rail, whatever the ranks per node"));
  EXPECT_THAT(run.output,
              HasSubstr("  one RC per peer        4095      0     8190.0 MiB      4.0 MiB    257.9 MiB     8451.9 MiB\n"));
  EXPECT_THAT(run.output,
              HasSubstr("  rc-pool 256             256      1      528.2 MiB      4.0 MiB     16.2 MiB      548.4 MiB\n"));
  const BinaryRun two = OhioPlan("--queue-pairs --nodes 4096 --rails 2 --rc-pool 0");
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_THAT(two.output, HasSubstr("  rc-pool 0                 0      2       32.3 MiB      8.0 MiB      0.2 MiB       40.6 MiB\n"));
  // An unlimited pool is the transport as it runs: one row.
  const BinaryRun unlimited = OhioPlan("--queue-pairs --nodes 8 --rc-pool unlimited");
  ASSERT_EQ(unlimited.exit_code, 0) << unlimited.output;
  EXPECT_THAT(unlimited.output, Not(HasSubstr("rc-pool")));
}

// --explain with the built-in table (32+ 16KiB hypercube, 4+ 8KiB hypercube) and with a table file, whose errors
// name the line.
TEST(OhioPlanBinary, ExplainPrintsTheTableTheChoiceItsRowAndTheCosts) {
  const BinaryRun run = OhioPlan("--nodes 8 --ppn 2 --bytes 64 --explain");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("inter-node table: the built-in table, digest "));
  EXPECT_THAT(run.output, HasSubstr("  row 1: 32+ 16KiB hypercube\n  row 2: 4+ 8KiB hypercube\n"));
  EXPECT_THAT(run.output, HasSubstr("group: 8 nodes, at most 2 ranks per node, M = 64 B: block 256 B (M x 2 x 2)\n"));
  EXPECT_THAT(run.output, HasSubstr("chosen: hypercube (row 2: 4+ 8KiB hypercube)\n"));
  // Alltoallv: the row's 8 KiB blocks fit the inboxes of 8 MiB, among 8 nodes (XOR pairing) as
  // among 6 (the rotation); 3 nodes are below the table's rows.
  EXPECT_THAT(run.output, HasSubstr("alltoallv: hypercube while every node-to-node block is at most 8192 B"));
  EXPECT_THAT(OhioPlan("--nodes 6 --ppn 2 --bytes 64 --explain").output,
              HasSubstr("alltoallv: hypercube while every node-to-node block is at most 8192 B"));
  EXPECT_THAT(OhioPlan("--nodes 3 --ppn 2 --bytes 64 --explain").output,
              HasSubstr("alltoallv: pairwise (the table runs no hypercube for this group, or its inboxes hold no block)\n"));
  // 8 nodes: 7 messages pairwise and direct, 3 for the hypercube (each 4 blocks of 256 B).
  EXPECT_THAT(run.output, HasSubstr("  pairwise                7      7        1792\n"));
  EXPECT_THAT(run.output, HasSubstr("  hypercube               3      3        3072  <- chosen\n"));
  EXPECT_THAT(run.output, HasSubstr("  direct                  7      1        1792\n"));
  // The sweep crosses the row's edge (8 KiB) between M = 1024 (block 4 KiB) and M = 4096.
  EXPECT_THAT(run.output, HasSubstr("  1024        4096          hypercube  row 2\n"));
  EXPECT_THAT(run.output, HasSubstr("  4096        16384         pairwise   no row\n"));

  EXPECT_THAT(run.output, HasSubstr("buffers: v3, SSB 16777216 B, SRB 8388608 B per group and node\n"));

  // An SRB of 4 KiB: eager rounds, but the hypercube's third message (4 blocks of 256 B) does
  // not fit its inbox, so pairwise runs and is the one marked.
  const BinaryRun small = OhioPlan("--nodes 8 --ppn 2 --bytes 64 --srb-bytes 4KiB --explain");
  ASSERT_EQ(small.exit_code, 0) << small.output;
  EXPECT_THAT(small.output, HasSubstr("buffers: v3, SSB 16777216 B, SRB 4096 B per group and node\n"));
  EXPECT_THAT(small.output, HasSubstr("chosen: pairwise (row 2: 4+ 8KiB hypercube, but the hypercube does not fit: "
                                      "its messages do not fit the SRB half's inboxes, or the ranks' rows the SSB half)\n"));
  EXPECT_THAT(small.output, HasSubstr("  pairwise                7      7        1792  <- chosen\n"));
  EXPECT_THAT(small.output, HasSubstr("  hypercube               3      3        3072\n"));
  EXPECT_THAT(small.output, HasSubstr("  64          256           pairwise   row 2, hypercube does not fit\n"));
  // The alltoallv's cap shrinks to what 4 blocks behind a line of header and sizes leave of an
  // inbox: the half is 7 slots of 320 B, an inbox a third of it to a cache line (704 B); less
  // the 128-byte line, / 4.
  EXPECT_THAT(small.output, HasSubstr("alltoallv: hypercube while every node-to-node block is at most 144 B"));
  const BinaryRun v1 = OhioPlan("--nodes 8 --ppn 2 --bytes 64 --algo v1 --explain");
  ASSERT_EQ(v1.exit_code, 0) << v1.output;
  EXPECT_THAT(v1.output, HasSubstr("but the hypercube does not fit: v1's SSB is not laid out per node)\n"));
  const BinaryRun flat = OhioPlan("--nodes 8 --ppn 2 --bytes 64 --algo flat --explain");
  EXPECT_EQ(flat.exit_code, 2);
  EXPECT_EQ(flat.output, "ohio-plan: --explain plans the daemons' inter-node algorithm: --algo v1, v2 or v3, not flat\n");

  const std::string table = ::testing::TempDir() + "/explain.table";
  std::ofstream(table) << "# nodes max-block algorithm\n2-4 4KiB hypercube\n2+ any direct\n";
  const BinaryRun file = OhioPlan("--nodes 2 --ppn 4 --bytes 1MiB --explain --internode-table " + table);
  ASSERT_EQ(file.exit_code, 0) << file.output;
  EXPECT_THAT(file.output, HasSubstr("inter-node table: the table " + table + ", digest "));
  EXPECT_THAT(file.output, HasSubstr("chosen: direct (row 2: 2+ any direct)\n"));

  std::ofstream(table) << "2-4 4KiB hypercube\n2+ any bruck\n";
  const BinaryRun bad = OhioPlan("--nodes 2 --ppn 4 --bytes 1 --explain --internode-table " + table);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.output, "ohio-plan: inter-node table " + table + ":2: unknown inter-node algorithm 'bruck' (pairwise, hypercube or direct)\n");
}

TEST(OhioPlanBinary, SelectNamesTheVerdictOfEveryFunctionAndItsRow) {
  const BinaryRun builtin = OhioPlan("--nodes 4 --ppn 2 --bytes 64KiB --select");
  ASSERT_EQ(builtin.exit_code, 0) << builtin.output;
  EXPECT_THAT(builtin.output, HasSubstr("selection table: the built-in table, digest "));
  EXPECT_THAT(builtin.output, HasSubstr("shape: 4 nodes, at most 2 ranks per node, transport tcp; 64KiB per rank pair\n"));
  EXPECT_THAT(builtin.output, HasSubstr("  alltoall    the MPI library (no row matches)\n"));

  const std::string table = ::testing::TempDir() + "/select.table";
  std::ofstream(table) << "# function nodes ppn transport bytes path\n"
                          "alltoall 2 2 tcp 64-256 ohio\n"
                          "alltoall 2 2 tcp any mpi\n"
                          "ialltoall any any any 4KiB+ ohio\n"
                          "alltoallv 2+ any any any ohio\n";
  const BinaryRun file = OhioPlan("--nodes 2 --ppn 2 --bytes 128 --select --selection-table " + table);
  ASSERT_EQ(file.exit_code, 0) << file.output;
  EXPECT_THAT(file.output, HasSubstr("selection table: the table " + table + ", digest "));
  EXPECT_THAT(file.output, HasSubstr("  1: alltoall 2 2 tcp 64-256 ohio\n"));
  EXPECT_THAT(file.output, HasSubstr("  alltoall    ohio (row 1: alltoall 2 2 tcp 64-256 ohio)\n"));
  EXPECT_THAT(file.output, HasSubstr("  alltoallv   ohio (row 4: alltoallv 2+ any any any ohio); whatever each rank's bytes\n"));
  EXPECT_THAT(file.output, HasSubstr("  ialltoall   the MPI library (no row matches)\n"));
  EXPECT_THAT(file.output, HasSubstr("alltoall by bytes per rank pair: from 1B MPI library, from 64B ohio, from 512B MPI "
                                     "library\n"));
  EXPECT_THAT(file.output, HasSubstr("ialltoall by bytes per rank pair: from 1B MPI library, from 4KiB ohio\n"));
  // Over verbs the tcp rows do not match.
  const BinaryRun verbs = OhioPlan("--nodes 2 --ppn 2 --bytes 128 --select --transport verbs --selection-table " + table);
  EXPECT_THAT(verbs.output, HasSubstr("  alltoall    the MPI library (no row matches)\n"));

  std::ofstream(table) << "alltoall 2 2 tcp 64-256 ohio\nalltoall 2 2 tcp any library\n";
  const BinaryRun bad = OhioPlan("--nodes 2 --ppn 2 --bytes 1 --select --selection-table " + table);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.output, "ohio-plan: selection table " + table +
                            ":2: unknown path 'library' (ohio: served through ohio; mpi: handed to the MPI library)\n");
  const BinaryRun both = OhioPlan("--nodes 2 --ppn 2 --bytes 1 --select --explain");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_EQ(both.output, "ohio-plan: --select and --explain are two reports: ask for one\n");
}

TEST(OhioPlanBinary, HelpDescribesEveryFlag) {
  const BinaryRun run = OhioPlan("--help");
  EXPECT_EQ(run.exit_code, 0);
  for (const char* flag : {"--nodes", "--ppn", "--ppn-list", "--bytes", "--algo", "--json", "--ssb-bytes",
                           "--srb-bytes", "--min-slice-bytes", "--per-node", "--explain", "--internode-table", "--select",
                           "--selection-table", "--transport"}) {
    EXPECT_THAT(run.output, HasSubstr(flag));
  }
}

}  // namespace
}  // namespace ohio
