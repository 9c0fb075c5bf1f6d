#include "shm/plan/copy_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "common/status.h"
#include "shm/plan/node_level_design.h"
#include "shm/plan/group_shape.h"
#include "shm/plan/staging.h"
#include "tests/unit/plan/rank_maps.h"

namespace ohio {

void PrintTo(const CopySpan& c, std::ostream* os) {
  *os << "{src " << c.src << ", dst " << c.dst << ", len " << c.len << "}";
}

namespace {

using testing_util::AllValidMaps;
using testing_util::MapName;

constexpr NodeLevelDesign kAlgos[] = {NodeLevelDesign::kV1, NodeLevelDesign::kV2, NodeLevelDesign::kV3};
constexpr uint64_t kSlices[] = {1, 3, 64, 100};
constexpr uint64_t kSizes[] = {0, 1, 3, 64, 100};

GroupShape Shape(uint32_t nodes, const std::vector<uint32_t>& map) {
  Result<GroupShape> r = GroupShape::Make(nodes, map);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.value();
}

std::string Describe(const testing_util::RankMap& rm, NodeLevelDesign algo) {
  return std::string(NodeLevelDesignName(algo)) + " " + MapName(rm.rank_node) + " over " +
         std::to_string(rm.nodes);
}

// (a) For each node, (l, dest) -> SsbOffset is a bijection onto the slots of one round.
TEST(SsbOffset, BijectionOntoRound) {
  for (const auto& rm : AllValidMaps(5, 3)) {
    const GroupShape s = Shape(rm.nodes, rm.rank_node);
    const uint32_t p = s.size();
    for (NodeLevelDesign algo : kAlgos) {
      SCOPED_TRACE(Describe(rm, algo));
      for (uint32_t n = 0; n < s.nodes(); ++n) {
        for (uint64_t slice : kSlices) {
          const uint64_t slots = uint64_t{s.ppn(n)} * p;
          ASSERT_EQ(SsbRoundBytes(s, n, slice), slots * slice);
          std::vector<int> hits(slots, 0);
          for (uint32_t l = 0; l < s.ppn(n); ++l) {
            for (uint32_t dest = 0; dest < p; ++dest) {
              const uint64_t off = SsbOffset(s, algo, n, l, dest, slice);
              ASSERT_EQ(off % slice, 0u) << "node " << n << " l " << l << " dest " << dest;
              ASSERT_LT(off / slice, slots) << "node " << n << " l " << l << " dest " << dest;
              ++hits[off / slice];
            }
          }
          for (uint64_t i = 0; i < slots; ++i) {
            EXPECT_EQ(hits[i], 1) << "node " << n << " slot " << i << " slice " << slice;
          }
        }
      }
    }
  }
}

// The documented layouts themselves: v1 [l][dest]; v2, v3 [j][l][local index of dest].
TEST(SsbOffset, DocumentedLayout) {
  for (const auto& rm : AllValidMaps(5, 3)) {
    SCOPED_TRACE(MapName(rm.rank_node));
    const GroupShape s = Shape(rm.nodes, rm.rank_node);
    for (uint32_t n = 0; n < s.nodes(); ++n) {
      for (uint32_t l = 0; l < s.ppn(n); ++l) {
        for (uint32_t dest = 0; dest < s.size(); ++dest) {
          const uint32_t j = s.node_of(dest);
          uint64_t block = 0;
          for (uint32_t i = 0; i < j; ++i) block += uint64_t{s.ppn(n)} * s.ppn(i);
          for (uint64_t slice : kSlices) {
            EXPECT_EQ(SsbOffset(s, NodeLevelDesign::kV1, n, l, dest, slice),
                      (uint64_t{l} * s.size() + dest) * slice);
            const uint64_t coalesced =
                (block + uint64_t{l} * s.ppn(j) + s.local_index(dest)) * slice;
            EXPECT_EQ(SsbOffset(s, NodeLevelDesign::kV2, n, l, dest, slice), coalesced);
            EXPECT_EQ(SsbOffset(s, NodeLevelDesign::kV3, n, l, dest, slice), coalesced);
          }
        }
      }
    }
  }
}

// (b) v2/v3: block j is contiguous at SsbBlockOffset(j), BlockBytes long, holds only data
// for node j, row l of it is contiguous, and the blocks tile the round in node order.
TEST(SsbOffset, CoalescedBlocks) {
  for (const auto& rm : AllValidMaps(5, 3)) {
    const GroupShape s = Shape(rm.nodes, rm.rank_node);
    for (NodeLevelDesign algo : {NodeLevelDesign::kV2, NodeLevelDesign::kV3}) {
      SCOPED_TRACE(Describe(rm, algo));
      for (uint32_t n = 0; n < s.nodes(); ++n) {
        for (uint64_t slice : kSlices) {
          const uint64_t round_bytes = SsbRoundBytes(s, n, slice);
          std::vector<int> owner(round_bytes / slice, -1);  // node of the slot's destination
          for (uint32_t l = 0; l < s.ppn(n); ++l) {
            for (uint32_t dest = 0; dest < s.size(); ++dest) {
              owner[SsbOffset(s, algo, n, l, dest, slice) / slice] =
                  static_cast<int>(s.node_of(dest));
            }
          }
          uint64_t expected_start = 0;
          for (uint32_t j = 0; j < s.nodes(); ++j) {
            const uint64_t start = SsbBlockOffset(s, n, j, slice);
            const uint64_t bytes = BlockBytes(s, n, j, slice);
            EXPECT_EQ(start, expected_start) << "block " << j << " of node " << n;
            EXPECT_EQ(bytes, uint64_t{s.ppn(n)} * s.ppn(j) * slice);
            ASSERT_LE(start + bytes, round_bytes);
            for (uint64_t i = start / slice; i < (start + bytes) / slice; ++i) {
              EXPECT_EQ(owner[i], static_cast<int>(j)) << "slot " << i << " in block " << j;
            }
            for (uint32_t l = 0; l < s.ppn(n); ++l) {
              const uint64_t row = start + uint64_t{l} * s.ppn(j) * slice;
              for (uint32_t r = 0; r < s.ppn(j); ++r) {
                const uint64_t off = SsbOffset(s, algo, n, l, s.rank_at(j, r), slice);
                EXPECT_GE(off, start);
                EXPECT_LT(off, start + bytes);
                EXPECT_EQ(off, row + r * slice) << "row " << l << " column " << r;
              }
            }
            expected_start = start + bytes;
          }
          EXPECT_EQ(expected_start, round_bytes);
        }
      }
    }
  }
}

// Byte k of the message from `src` to `dest`: the data the simulation moves.
uint8_t PatternByte(uint32_t src, uint32_t dest, uint64_t k) {
  uint64_t x = (uint64_t{src} << 40) ^ (uint64_t{dest} << 20) ^ k;
  x *= 0x9e3779b97f4a7c15ull;
  return static_cast<uint8_t>(x >> 56);
}

// A tag unique to (src, dest, k), moved alongside the bytes so that a misplaced byte cannot
// pass by carrying an equal value. 0 means "never written".
uint32_t Tag(uint32_t p, uint64_t m, uint32_t src, uint32_t dest, uint64_t k) {
  return static_cast<uint32_t>((uint64_t{src} * p + dest) * m + k + 1);
}

bool Mergeable(const CopySpan& a, const CopySpan& b) {
  return a.src + a.len == b.src && a.dst + a.len == b.dst;
}

void CheckMerged(const std::vector<CopySpan>& spans, const std::string& what) {
  for (size_t i = 0; i + 1 < spans.size(); ++i) {
    EXPECT_FALSE(Mergeable(spans[i], spans[i + 1])) << what << ": spans " << i << " and " << i + 1
                                                     << " are adjacent on both sides";
  }
}

struct Counts {
  int cases = 0;
  int multi_round = 0;
  int single_round = 0;
};

// (c) One alltoall simulated node by node and round by round, intra-node part only.
void Simulate(const GroupShape& s, NodeLevelDesign algo, uint64_t ssb_bytes, uint64_t m, Counts* counts) {
  Result<Staging> planned = PlanStaging(s, ssb_bytes, m);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  const Staging st = planned.value();
  SCOPED_TRACE("M " + std::to_string(m) + " ssb " + std::to_string(ssb_bytes) + " slice " +
               std::to_string(st.slice) + " rounds " + std::to_string(st.rounds));
  ++counts->cases;
  (st.rounds > 1 ? counts->multi_round : counts->single_round)++;

  const uint32_t p = s.size();
  const uint64_t buf = uint64_t{p} * m;
  std::vector<std::vector<uint8_t>> send(p, std::vector<uint8_t>(buf));
  std::vector<std::vector<uint32_t>> send_tag(p, std::vector<uint32_t>(buf));
  std::vector<std::vector<uint8_t>> recv(p, std::vector<uint8_t>(buf, 0xEE));
  std::vector<std::vector<uint32_t>> recv_tag(p, std::vector<uint32_t>(buf, 0));
  std::vector<std::vector<int>> recv_writes(p, std::vector<int>(buf, 0));
  for (uint32_t g = 0; g < p; ++g) {
    for (uint32_t d = 0; d < p; ++d) {
      for (uint64_t k = 0; k < m; ++k) {
        send[g][d * m + k] = PatternByte(g, d, k);
        send_tag[g][d * m + k] = Tag(p, m, g, d, k);
      }
    }
  }

  std::vector<uint8_t> ssb(ssb_bytes);
  std::vector<uint32_t> ssb_tag(ssb_bytes);
  std::vector<int> ssb_writes(ssb_bytes);
  for (uint32_t n = 0; n < s.nodes(); ++n) {
    ASSERT_LE(SsbRoundBytes(s, n, st.slice), ssb_bytes) << "node " << n;
    for (uint64_t round = 0; round < st.rounds; ++round) {
      SCOPED_TRACE("node " + std::to_string(n) + " round " + std::to_string(round));
      const uint64_t len = st.length(round);
      const uint64_t off = st.offset(round);
      const uint64_t used = SsbRoundBytes(s, n, len);
      ASSERT_LE(used, ssb_bytes);
      // Spans are bounds-checked against `used` below, so only that much needs resetting.
      std::fill_n(ssb.begin(), used, 0xCD);
      std::fill_n(ssb_tag.begin(), used, 0);
      std::fill_n(ssb_writes.begin(), used, 0);

      for (uint32_t l = 0; l < s.ppn(n); ++l) {
        const std::vector<CopySpan> spans = PlanCopyIn(s, algo, n, l, st, round);
        CheckMerged(spans, "copy-in of l " + std::to_string(l));
        const uint32_t g = s.rank_at(n, l);
        for (const CopySpan& c : spans) {
          ASSERT_GT(c.len, 0u);
          ASSERT_LE(c.src + c.len, buf) << "copy-in reads past the send buffer";
          ASSERT_LE(c.dst + c.len, used) << "copy-in writes past the round's SSB bytes";
          std::memcpy(ssb.data() + c.dst, send[g].data() + c.src, c.len);
          std::copy_n(send_tag[g].begin() + c.src, c.len, ssb_tag.begin() + c.dst);
          for (uint64_t i = 0; i < c.len; ++i) ++ssb_writes[c.dst + i];
        }
      }
      // Every byte of the round written once by copy-in, and where SsbOffset says.
      for (uint64_t i = 0; i < used; ++i) {
        ASSERT_EQ(ssb_writes[i], 1) << "SSB byte " << i;
      }
      for (uint32_t l = 0; l < s.ppn(n); ++l) {
        const uint32_t g = s.rank_at(n, l);
        for (uint32_t dest = 0; dest < p; ++dest) {
          const uint64_t at = SsbOffset(s, algo, n, l, dest, len);
          for (uint64_t k = 0; k < len; ++k) {
            ASSERT_EQ(ssb_tag[at + k], Tag(p, m, g, dest, off + k))
                << "l " << l << " dest " << dest << " k " << k;
            ASSERT_EQ(ssb[at + k], PatternByte(g, dest, off + k));
          }
        }
      }
      if (algo != NodeLevelDesign::kV1) {
        for (uint32_t j = 0; j < s.nodes(); ++j) {
          const uint64_t start = SsbBlockOffset(s, n, j, len);
          for (uint64_t i = start; i < start + BlockBytes(s, n, j, len); ++i) {
            const uint32_t dest = static_cast<uint32_t>((ssb_tag[i] - 1) / m % p);
            ASSERT_EQ(s.node_of(dest), j) << "SSB byte " << i << " of block " << j;
          }
        }
      }

      for (uint32_t r = 0; r < s.ppn(n); ++r) {
        const std::vector<CopySpan> spans = PlanCopyOutOnNode(s, algo, n, r, st, round);
        CheckMerged(spans, "copy-out of r " + std::to_string(r));
        const uint32_t me = s.rank_at(n, r);
        for (const CopySpan& c : spans) {
          ASSERT_GT(c.len, 0u);
          ASSERT_LE(c.src + c.len, used) << "copy-out reads past the round's SSB bytes";
          ASSERT_LE(c.dst + c.len, buf) << "copy-out writes past the receive buffer";
          std::memcpy(recv[me].data() + c.dst, ssb.data() + c.src, c.len);
          std::copy_n(ssb_tag.begin() + c.src, c.len, recv_tag[me].begin() + c.dst);
          for (uint64_t i = 0; i < c.len; ++i) ++recv_writes[me][c.dst + i];
        }
      }
    }
  }

  for (uint32_t me = 0; me < p; ++me) {
    for (uint32_t src = 0; src < p; ++src) {
      const bool local = s.node_of(src) == s.node_of(me);
      for (uint64_t k = 0; k < m; ++k) {
        const uint64_t i = src * m + k;
        if (local) {
          ASSERT_EQ(recv_writes[me][i], 1) << "rank " << me << " from " << src << " byte " << k;
          ASSERT_EQ(recv_tag[me][i], Tag(p, m, src, me, k))
              << "rank " << me << " from " << src << " byte " << k;
          ASSERT_EQ(recv[me][i], PatternByte(src, me, k));
        } else {
          ASSERT_EQ(recv_writes[me][i], 0) << "rank " << me << " got remote data from " << src
                                           << " out of the own SSB";
          ASSERT_EQ(recv[me][i], 0xEE);
        }
      }
    }
  }
}

TEST(CopyPlan, SimulateIntraNodeAlltoall) {
  Counts counts;
  for (const auto& rm : AllValidMaps(5, 3)) {
    const GroupShape s = Shape(rm.nodes, rm.rank_node);
    const uint64_t min = MinSsbBytes(s);
    for (NodeLevelDesign algo : kAlgos) {
      SCOPED_TRACE(Describe(rm, algo));
      for (uint64_t m : kSizes) {
        std::vector<uint64_t> ssbs;
        for (uint64_t factor : {1ull, 2ull, 3ull, 7ull, 64ull, 65ull, 100ull, 128ull}) {
          ssbs.push_back(min * factor);
        }
        ssbs.push_back(min * 64 + min - 1);  // not a multiple of the message count
        for (uint64_t ssb : ssbs) {
          Simulate(s, algo, ssb, m, &counts);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
  EXPECT_GT(counts.single_round, 1000);
  EXPECT_GT(counts.multi_round, 1000);
}

// Number of maximal runs of consecutive group ranks among node j's ranks.
uint32_t Runs(const GroupShape& s, uint32_t j) {
  uint32_t runs = 1;
  for (uint32_t i = 1; i < s.ppn(j); ++i) runs += s.rank_at(j, i) != s.rank_at(j, i - 1) + 1;
  return runs;
}

// One round: v1 copies a rank's whole send buffer in one span, whatever the placement; v2/v3
// need one span per run of consecutive ranks of each destination node at most (one per node
// when every node's ranks are consecutive, one in all when a single node holds every rank).
TEST(CopyPlan, SingleRoundCopyInIsMerged) {
  for (const auto& rm : AllValidMaps(5, 3)) {
    const GroupShape s = Shape(rm.nodes, rm.rank_node);
    const uint32_t p = s.size();
    for (uint64_t m : {1ull, 3ull, 64ull, 100ull}) {
      Result<Staging> st = PlanStaging(s, MinSsbBytes(s) * m, m);
      ASSERT_TRUE(st.ok());
      ASSERT_EQ(st.value().rounds, 1u);
      uint32_t runs = 0;
      for (uint32_t j = 0; j < s.nodes(); ++j) runs += Runs(s, j);
      for (uint32_t n = 0; n < s.nodes(); ++n) {
        for (uint32_t l = 0; l < s.ppn(n); ++l) {
          SCOPED_TRACE(MapName(rm.rank_node) + " M " + std::to_string(m) + " node " +
                       std::to_string(n) + " l " + std::to_string(l));
          const std::vector<CopySpan> v1 = PlanCopyIn(s, NodeLevelDesign::kV1, n, l, st.value(), 0);
          ASSERT_EQ(v1.size(), 1u);
          EXPECT_EQ(v1[0], (CopySpan{0, uint64_t{l} * p * m, p * m}));
          for (NodeLevelDesign algo : {NodeLevelDesign::kV2, NodeLevelDesign::kV3}) {
            const std::vector<CopySpan> v = PlanCopyIn(s, algo, n, l, st.value(), 0);
            EXPECT_LE(v.size(), runs) << NodeLevelDesignName(algo);
            if (s.nodes() == 1) {
              ASSERT_EQ(v.size(), 1u);
              EXPECT_EQ(v[0], (CopySpan{0, uint64_t{l} * p * m, p * m}));
            }
          }
        }
      }
    }
  }
}

TEST(CopyPlan, ZeroBytesCopiesNothing) {
  for (const auto& rm : AllValidMaps(4, 3)) {
    const GroupShape s = Shape(rm.nodes, rm.rank_node);
    Result<Staging> st = PlanStaging(s, MinSsbBytes(s), 0);
    ASSERT_TRUE(st.ok());
    for (NodeLevelDesign algo : kAlgos) {
      for (uint32_t n = 0; n < s.nodes(); ++n) {
        for (uint32_t l = 0; l < s.ppn(n); ++l) {
          EXPECT_TRUE(PlanCopyIn(s, algo, n, l, st.value(), 0).empty());
          EXPECT_TRUE(PlanCopyOutOnNode(s, algo, n, l, st.value(), 0).empty());
        }
      }
    }
  }
}

// A hand-checked case: 2 nodes, ranks {0,2} on node 0 and {1,3} on node 1, M = 4, one round.
TEST(CopyPlan, HandCheckedInterleaved) {
  const GroupShape s = Shape(2, {0, 1, 0, 1});
  Result<Staging> st = PlanStaging(s, 2 * 4 * 4, 4);
  ASSERT_TRUE(st.ok());
  ASSERT_EQ(st.value().rounds, 1u);
  // Node 0, l = 1 (rank 2), v2: block 0 = [l][dest 0, 2], block 1 = [l][dest 1, 3].
  EXPECT_EQ(PlanCopyIn(s, NodeLevelDesign::kV2, 0, 1, st.value(), 0),
            (std::vector<CopySpan>{{0, 8, 4}, {8, 12, 4}, {4, 24, 4}, {12, 28, 4}}));
  // Rank 2 copies out what ranks 0 and 2 sent it: SSB [l][local index 1] of block 0.
  EXPECT_EQ(PlanCopyOutOnNode(s, NodeLevelDesign::kV2, 0, 1, st.value(), 0),
            (std::vector<CopySpan>{{4, 0, 4}, {12, 8, 4}}));
  // v1: rank 2's whole row, then [l][dest 2].
  EXPECT_EQ(PlanCopyIn(s, NodeLevelDesign::kV1, 0, 1, st.value(), 0),
            (std::vector<CopySpan>{{0, 16, 16}}));
  EXPECT_EQ(PlanCopyOutOnNode(s, NodeLevelDesign::kV1, 0, 1, st.value(), 0),
            (std::vector<CopySpan>{{8, 0, 4}, {24, 8, 4}}));
}

}  // namespace
}  // namespace ohio
