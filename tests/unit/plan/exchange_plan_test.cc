#include "shm/plan/exchange_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "shm/plan/node_level_design.h"
#include "shm/plan/copy_plan.h"
#include "shm/plan/group_shape.h"
#include "shm/plan/staging.h"
#include "tests/unit/plan/rank_maps.h"

namespace ohio {
namespace {

using testing_util::AllValidMaps;
using testing_util::MapName;
using testing_util::RankMap;

constexpr NodeLevelDesign kAlgos[] = {NodeLevelDesign::kV1, NodeLevelDesign::kV2, NodeLevelDesign::kV3};
constexpr uint64_t kSizes[] = {0, 1, 3, 64, 100};
constexpr uint64_t kLine = 64;

GroupShape Shape(uint32_t nodes, const std::vector<uint32_t>& map) {
  Result<GroupShape> r = GroupShape::Make(nodes, map);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.value();
}

std::string Describe(const RankMap& rm, NodeLevelDesign algo) {
  return std::string(NodeLevelDesignName(algo)) + " " + MapName(rm.rank_node) + " over " + std::to_string(rm.nodes);
}

// Every placement of up to 4 ranks on up to 4 nodes (every node holding a rank), every 7th of
// the 5-rank ones (all of them made the suite take minutes under ASan in CI), and a few larger
// ones: 5 nodes (not a power of two) with 5 and 6 ranks, uneven 3+1+2 placements, and 8 nodes
// so that the XOR schedule has more than two bits.
std::vector<RankMap> TestMaps() {
  std::vector<RankMap> maps = AllValidMaps(4, 4);
  const std::vector<RankMap> five = AllValidMaps(5, 4);
  for (size_t i = 0; i < five.size(); i += 7) {
    if (five[i].rank_node.size() == 5) maps.push_back(five[i]);
  }
  const std::vector<RankMap> extra = {
      {5, {0, 1, 2, 3, 4}},
      {5, {3, 0, 4, 1, 2}},
      {5, {0, 1, 2, 3, 4, 2}},
      {5, {4, 0, 0, 3, 1, 2}},
      {3, {0, 0, 0, 1, 2, 2}},
      {3, {0, 2, 1, 0, 2, 0}},
      {3, {2, 0, 0, 1, 0, 2}},
      {4, {0, 0, 1, 2, 3, 3}},
      {8, {0, 1, 2, 3, 4, 5, 6, 7, 5}},
      {8, {7, 6, 5, 4, 3, 2, 1, 0, 0}},
  };
  maps.insert(maps.end(), extra.begin(), extra.end());
  return maps;
}

bool PowerOfTwo(uint32_t n) { return n != 0 && (n & (n - 1)) == 0; }

// Remote messages node n receives per round, computed from the shape alone.
uint64_t RemoteMessages(const GroupShape& s, uint32_t n) {
  uint64_t remote = 0;
  for (uint32_t g = 0; g < s.size(); ++g) {
    if (s.node_of(g) != n) remote += s.ppn(n);
  }
  return remote;
}

uint64_t MaxRemoteMessages(const GroupShape& s) {
  uint64_t most = 0;
  for (uint32_t n = 0; n < s.nodes(); ++n) most = std::max(most, RemoteMessages(s, n));
  return most;
}

uint64_t CeilDiv(uint64_t a, uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// ---------------------------------------------------------------------------------------------
// 1. The pairwise schedule.

TEST(PairwiseSchedule, PermutationsConsistencyAndPartners) {
  for (uint32_t n = 1; n <= 17; ++n) {
    std::vector<std::vector<Step>> all(n);
    for (uint32_t node = 0; node < n; ++node) all[node] = PairwiseSchedule(n, node);
    for (uint32_t node = 0; node < n; ++node) {
      SCOPED_TRACE("N " + std::to_string(n) + " node " + std::to_string(node));
      const std::vector<Step>& steps = all[node];
      ASSERT_EQ(steps.size(), n - 1);
      std::vector<int> sent(n, 0);
      std::vector<int> received(n, 0);
      for (uint32_t s = 0; s < steps.size(); ++s) {
        const Step& st = steps[s];
        ASSERT_LT(st.send_to, n) << "step " << s;
        ASSERT_LT(st.recv_from, n) << "step " << s;
        ++sent[st.send_to];
        ++received[st.recv_from];
        // A send at step s is the partner's receive at step s, and the other way round.
        EXPECT_EQ(all[st.send_to][s].recv_from, node) << "step " << s;
        EXPECT_EQ(all[st.recv_from][s].send_to, node) << "step " << s;
        if (PowerOfTwo(n)) {
          EXPECT_EQ(st.send_to, node ^ (s + 1)) << "step " << s;
          EXPECT_EQ(st.recv_from, node ^ (s + 1)) << "step " << s;
        } else {
          EXPECT_EQ(st.send_to, (node + s + 1) % n) << "step " << s;
          EXPECT_EQ(st.recv_from, (node + n - (s + 1)) % n) << "step " << s;
        }
      }
      for (uint32_t q = 0; q < n; ++q) {
        EXPECT_EQ(sent[q], q == node ? 0 : 1) << "sends to " << q;
        EXPECT_EQ(received[q], q == node ? 0 : 1) << "receives from " << q;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// SRB halves and minimum sizes.

TEST(SrbHalfBytes, TwoHalvesFitAndAreCacheLines) {
  for (uint64_t srb = 0; srb < 5000; ++srb) {
    const uint64_t half = SrbHalfBytes(srb);
    EXPECT_LE(2 * half, srb) << "srb " << srb;
    if (srb >= 2 * kLine) {
      EXPECT_EQ(half % kLine, 0u) << "srb " << srb;
      EXPECT_GT(half + kLine, srb / 2) << "srb " << srb << ": more than a line wasted";
    } else {
      EXPECT_EQ(half, srb / 2) << "srb " << srb;
    }
  }
  EXPECT_EQ(SrbHalfBytes(8u << 20), 4u << 20);
}

TEST(MinSrbBytes, MatchesTheShape) {
  for (const RankMap& rm : TestMaps()) {
    const GroupShape s = Shape(rm.nodes, rm.rank_node);
    SCOPED_TRACE(MapName(rm.rank_node) + " over " + std::to_string(rm.nodes));
    if (s.nodes() == 1) {
      for (NodeLevelDesign algo : kAlgos) EXPECT_EQ(MinSrbBytes(s, algo), 0u);
      continue;
    }
    EXPECT_EQ(MinSrbBytes(s, NodeLevelDesign::kV1), MaxRemoteMessages(s));
    EXPECT_EQ(MinSrbBytes(s, NodeLevelDesign::kV2), MaxRemoteMessages(s));
    EXPECT_EQ(MinSrbBytes(s, NodeLevelDesign::kV3), 2 * kLine);
  }
}

// ---------------------------------------------------------------------------------------------
// 3. Deliveries into node `node`'s SRB for one round of slice `slice`.

// Where node `node` hears from in a round covering `cover`, in order: every other node in
// PairwiseSchedule's order when the round covers every step, else node - t for its steps t > 0
// (step index t - 1).
std::vector<Step> ReceiveSteps(const GroupShape& s, uint32_t node, const RoundCover& cover) {
  if (cover.every_step(s.nodes())) return PairwiseSchedule(s.nodes(), node);
  std::vector<Step> steps;
  for (uint32_t t = std::max(cover.first_step, 1u); t < std::min(cover.end_step, s.nodes()); ++t) {
    steps.push_back({(node + t) % s.nodes(), (node + s.nodes() - t) % s.nodes()});
  }
  return steps;
}

// The step index a delivery or put of the i-th receive step carries.
uint32_t StepIndex(const RoundCover& cover, uint32_t nodes, uint32_t i) {
  return cover.every_step(nodes) ? i : std::max(cover.first_step, 1u) - 1 + i;
}

void CheckDeliveries(const GroupShape& s, NodeLevelDesign algo, uint32_t node, const RoundCover& cover, uint64_t srb_bytes,
                     const std::vector<Delivery>& dels) {
  const std::vector<Step> steps = ReceiveSteps(s, node, cover);
  for (uint32_t d = 0; d < dels.size(); ++d) {
    ASSERT_LE(dels[d].srb_offset + dels[d].bytes, srb_bytes) << "delivery " << d << " past the SRB";
  }
  if (algo != NodeLevelDesign::kV3) {
    ASSERT_EQ(dels.size(), steps.size());
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    uint64_t total = 0;
    for (uint32_t d = 0; d < dels.size(); ++d) {
      const Delivery& del = dels[d];
      SCOPED_TRACE("delivery " + std::to_string(d));
      EXPECT_EQ(del.step, StepIndex(cover, s.nodes(), d));
      EXPECT_EQ(del.source, steps[d].recv_from);
      EXPECT_EQ(del.block_offset, 0u);
      EXPECT_EQ(del.bytes, BlockBytes(s, del.source, node, cover));
      ranges.push_back({del.srb_offset, del.srb_offset + del.bytes});
      total += del.bytes;
    }
    if (cover.every_step(s.nodes()) && cover.first_row == 0 && cover.end_row >= s.max_ppn()) {
      EXPECT_EQ(total, RemoteMessages(s, node) * cover.length);
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 0; i + 1 < ranges.size(); ++i) {
      EXPECT_LE(ranges[i].second, ranges[i + 1].first) << "deliveries overlap in the SRB";
    }
    return;
  }
  const uint64_t half = SrbHalfBytes(srb_bytes);
  ASSERT_GT(half, 0u);
  uint32_t d = 0;
  for (uint32_t st = 0; st < steps.size(); ++st) {
    const uint32_t p = steps[st].recv_from;
    const uint64_t block = BlockBytes(s, p, node, cover);
    const uint64_t chunks = std::max<uint64_t>(1, CeilDiv(block, half));
    uint64_t at = 0;
    for (uint64_t c = 0; c < chunks; ++c, ++d) {
      SCOPED_TRACE("step " + std::to_string(st) + " chunk " + std::to_string(c) + " delivery " + std::to_string(d));
      ASSERT_LT(d, dels.size());
      const Delivery& del = dels[d];
      EXPECT_EQ(del.source, p);
      EXPECT_EQ(del.step, StepIndex(cover, s.nodes(), st));
      EXPECT_EQ(del.block_offset, at);
      EXPECT_LE(del.bytes, half);
      EXPECT_EQ(del.bytes, std::min(half, block - at)) << "block " << block << " half " << half;
      // Inside half d % 2.
      EXPECT_GE(del.srb_offset, (d % 2) * half);
      EXPECT_LE(del.srb_offset + del.bytes, (d % 2) * half + half);
      at += del.bytes;
    }
    EXPECT_EQ(at, block) << "step " << st << ": chunks do not cover the block";
  }
  EXPECT_EQ(d, dels.size()) << "more deliveries than the blocks need";
}

void CheckDeliveries(const GroupShape& s, NodeLevelDesign algo, uint32_t node, uint64_t slice, uint64_t srb_bytes,
                     const std::vector<Delivery>& dels) {
  CheckDeliveries(s, algo, node, WholeCover(slice), srb_bytes, dels);
}

TEST(PlanDeliveries, FitTheSrbAndTileTheBlocks) {
  int checked = 0;
  int chunked = 0;
  for (const RankMap& rm : TestMaps()) {
    const GroupShape s = Shape(rm.nodes, rm.rank_node);
    if (s.nodes() == 1) continue;
    for (NodeLevelDesign algo : kAlgos) {
      SCOPED_TRACE(Describe(rm, algo));
      for (uint64_t slice : {0ull, 1ull, 3ull, 63ull, 64ull, 100ull, 1000ull, 4099ull}) {
        std::vector<uint64_t> srbs;
        if (algo == NodeLevelDesign::kV3) {
          srbs = {128, 129, 191, 192, 256, 1000, 4096 + 7, 1u << 20};
        } else {
          const uint64_t need = MaxRemoteMessages(s) * slice;
          srbs = {need, need + 1, 3 * need + 5};
        }
        for (uint64_t srb : srbs) {
          for (uint32_t n = 0; n < s.nodes(); ++n) {
            SCOPED_TRACE("node " + std::to_string(n) + " slice " + std::to_string(slice) + " srb " +
                         std::to_string(srb));
            const std::vector<Delivery> dels = PlanDeliveries(s, algo, n, slice, srb);
            CheckDeliveries(s, algo, n, slice, srb, dels);
            if (::testing::Test::HasFailure()) return;
            ++checked;
            chunked += dels.size() > s.nodes() - 1;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 10000);
  EXPECT_GT(chunked, 1000);
}

// ---------------------------------------------------------------------------------------------
// 2. One alltoall simulated across all nodes with real bytes.

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

// How a receiver orders v3's deliveries. Sequential: apply d, copy d out, then d+1. Overlapped:
// delivery d+1 lands in the other half while d is copied out (the pipelining v3 exists for):
// apply d+1 before copying d out. Either way d is written only after d-2 was copied out.
enum class V3Order { kSequential, kOverlapped };

struct Counts {
  int cases = 0;
  int single_round = 0;
  int multi_round = 0;
  int chunked = 0;  // v3 rounds where some block took more than one delivery
};

struct NodeBuffers {
  std::vector<uint8_t> ssb;
  std::vector<uint32_t> ssb_tag;
  std::vector<uint8_t> srb;
  std::vector<uint32_t> srb_tag;
  std::vector<uint32_t> srb_owner;  // 1 + the delivery whose range last claimed the byte
  std::vector<int> srb_writes;      // puts that wrote the byte since its delivery claimed it
};

struct Incoming {
  uint32_t from;
  Put put;
};

void Simulate(const GroupShape& s, NodeLevelDesign algo, uint64_t ssb_bytes, uint64_t srb_bytes, uint64_t m,
              V3Order order, Counts* counts, uint64_t min_slice = 0) {
  Result<Staging> planned = PlanGroupStaging(s, algo, ssb_bytes, srb_bytes, m, min_slice);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  const Staging st = planned.value();
  SCOPED_TRACE("M " + std::to_string(m) + " ssb " + std::to_string(ssb_bytes) + " srb " + std::to_string(srb_bytes) +
               " slice " + std::to_string(st.slice) + " rounds " + std::to_string(st.rounds) + " min slice " +
               std::to_string(min_slice) + " steps " + std::to_string(st.steps) + " rows " + std::to_string(st.rows) +
               (order == V3Order::kOverlapped ? " overlapped" : ""));
  ASSERT_GE(st.rounds, 1u);
  ++counts->cases;
  (st.rounds > 1 ? counts->multi_round : counts->single_round)++;

  const uint32_t p = s.size();
  const uint32_t nodes = s.nodes();
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

  std::vector<std::vector<Step>> schedule(nodes);
  for (uint32_t n = 0; n < nodes; ++n) schedule[n] = PairwiseSchedule(nodes, n);

  std::vector<NodeBuffers> nb(nodes);
  for (uint64_t round = 0; round < st.rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const RoundCover cover = st.cover(round);

    // Copy-in on every node, then the intra-node copy-out straight from the SSB.
    for (uint32_t n = 0; n < nodes; ++n) {
      // The SSB itself is ssb_bytes, but only this much is used.
      const uint64_t used = SsbRoundBytes(s, n, cover);
      ASSERT_LE(used, ssb_bytes) << "node " << n;
      nb[n].ssb.resize(used);
      nb[n].ssb_tag.resize(used);
      std::fill_n(nb[n].ssb.begin(), used, 0xCD);
      std::fill_n(nb[n].ssb_tag.begin(), used, 0);
      for (uint32_t l = 0; l < s.ppn(n); ++l) {
        const uint32_t g = s.rank_at(n, l);
        for (const CopySpan& c : PlanCopyIn(s, algo, n, l, st, round)) {
          ASSERT_LE(c.src + c.len, buf);
          ASSERT_LE(c.dst + c.len, used);
          std::memcpy(nb[n].ssb.data() + c.dst, send[g].data() + c.src, c.len);
          std::copy_n(send_tag[g].begin() + c.src, c.len, nb[n].ssb_tag.begin() + c.dst);
        }
      }
      for (uint32_t r = 0; r < s.ppn(n); ++r) {
        const uint32_t me = s.rank_at(n, r);
        for (const CopySpan& c : PlanCopyOutOnNode(s, algo, n, r, st, round)) {
          ASSERT_LE(c.src + c.len, used);
          ASSERT_LE(c.dst + c.len, buf);
          std::memcpy(recv[me].data() + c.dst, nb[n].ssb.data() + c.src, c.len);
          std::copy_n(nb[n].ssb_tag.begin() + c.src, c.len, recv_tag[me].begin() + c.dst);
          for (uint64_t i = 0; i < c.len; ++i) ++recv_writes[me][c.dst + i];
        }
      }
    }

    // Every receiver's deliveries, checked for shape and sized into its SRB.
    std::vector<std::vector<Delivery>> dels(nodes);
    bool chunked = false;
    for (uint32_t q = 0; q < nodes; ++q) {
      SCOPED_TRACE("receiver " + std::to_string(q));
      dels[q] = PlanDeliveries(s, algo, q, cover, srb_bytes);
      CheckDeliveries(s, algo, q, cover, srb_bytes, dels[q]);
      if (::testing::Test::HasFailure()) return;
      chunked |= dels[q].size() > nodes - 1;
      uint64_t end = 0;
      for (const Delivery& d : dels[q]) end = std::max(end, d.srb_offset + d.bytes);
      if (nb[q].srb.size() < end) {
        // Stale bytes of earlier rounds stay; a delivery's range is cleared when it is claimed.
        nb[q].srb.resize(end, 0xAB);
        nb[q].srb_tag.resize(end, 0);
        nb[q].srb_owner.resize(end, 0);
        nb[q].srb_writes.resize(end, 0);
      }
    }
    if (algo == NodeLevelDesign::kV3 && chunked) ++counts->chunked;

    // Every sender's puts, checked against the receiver's deliveries and grouped by them.
    std::vector<std::vector<std::vector<Incoming>>> incoming(nodes);
    for (uint32_t q = 0; q < nodes; ++q) incoming[q].resize(dels[q].size());
    for (uint32_t n = 0; n < nodes; ++n) {
      SCOPED_TRACE("sender " + std::to_string(n));
      const uint64_t ssb_round = SsbRoundBytes(s, n, cover);
      for (const Put& put : PlanPuts(s, algo, n, cover, srb_bytes)) {
        SCOPED_TRACE("put to " + std::to_string(put.dest) + " delivery " + std::to_string(put.delivery) + " pieces " +
                     std::to_string(put.pieces.size()) + " bytes " + std::to_string(put.bytes) + " srb " +
                     std::to_string(put.srb_offset));
        ASSERT_LT(put.dest, nodes);
        ASSERT_NE(put.dest, n);
        ASSERT_LT(put.step, schedule[n].size());
        EXPECT_EQ(cover.every_step(nodes) ? schedule[n][put.step].send_to : (n + put.step + 1) % nodes, put.dest);
        ASSERT_LT(put.delivery, dels[put.dest].size());
        ASSERT_LT(put.delivery, kMaxRendezvousDeliveries);
        const Delivery& del = dels[put.dest][put.delivery];
        ASSERT_EQ(del.source, n) << "put into a delivery from another node";
        EXPECT_EQ(del.step, put.step);
        uint64_t gathered = 0;
        for (const SsbPiece& piece : put.pieces) {
          ASSERT_GT(piece.bytes, 0u);
          ASSERT_LE(piece.ssb_offset + piece.bytes, ssb_round) << "put reads past the round's SSB bytes";
          if (algo != NodeLevelDesign::kV1) {
            const uint64_t block = SsbBlockOffset(s, n, put.dest, cover);
            EXPECT_GE(piece.ssb_offset, block);
            EXPECT_LE(piece.ssb_offset + piece.bytes, block + BlockBytes(s, n, put.dest, cover));
          }
          gathered += piece.bytes;
        }
        ASSERT_EQ(gathered, put.bytes) << "a put's pieces do not add up to its bytes";
        // v2/v3 stage blocks contiguously; v1 gathers one piece per local rank and run.
        if (algo != NodeLevelDesign::kV1) EXPECT_EQ(put.pieces.size(), put.bytes == 0 ? 0u : 1u);
        ASSERT_LE(put.srb_offset + put.bytes, srb_bytes) << "put writes past the receiver's SRB";
        ASSERT_GE(put.srb_offset, del.srb_offset) << "put writes before its delivery";
        ASSERT_LE(put.srb_offset + put.bytes, del.srb_offset + del.bytes) << "put writes past its delivery";
        incoming[put.dest][put.delivery].push_back({n, put});
      }
    }
    for (uint32_t q = 0; q < nodes; ++q) {
      for (uint32_t d = 0; d < dels[q].size(); ++d) {
        uint64_t bytes = 0;
        for (const Incoming& in : incoming[q][d]) bytes += in.put.bytes;
        EXPECT_EQ(bytes, dels[q][d].bytes) << "receiver " << q << " delivery " << d;
        EXPECT_EQ(incoming[q][d].size(), 1u) << "receiver " << q << " delivery " << d << ": one put per delivery";
      }
    }
    if (::testing::Test::HasFailure()) return;

    for (uint32_t q = 0; q < nodes; ++q) {
      SCOPED_TRACE("receiver " + std::to_string(q));
      NodeBuffers& b = nb[q];
      // Claims delivery d's range (clearing whatever an earlier delivery left) and lands its puts.
      auto apply = [&](uint32_t d) {
        const Delivery& del = dels[q][d];
        for (uint64_t i = del.srb_offset; i < del.srb_offset + del.bytes; ++i) {
          b.srb[i] = 0xAB;
          b.srb_tag[i] = 0;
          b.srb_owner[i] = d + 1;
          b.srb_writes[i] = 0;
        }
        for (const Incoming& in : incoming[q][d]) {
          const Put& put = in.put;
          uint64_t at = put.srb_offset;
          for (const SsbPiece& piece : put.pieces) {
            std::memcpy(b.srb.data() + at, nb[in.from].ssb.data() + piece.ssb_offset, piece.bytes);
            std::copy_n(nb[in.from].ssb_tag.begin() + piece.ssb_offset, piece.bytes, b.srb_tag.begin() + at);
            at += piece.bytes;
          }
          for (uint64_t i = 0; i < put.bytes; ++i) ++b.srb_writes[put.srb_offset + i];
        }
        for (uint64_t i = del.srb_offset; i < del.srb_offset + del.bytes; ++i) {
          ASSERT_EQ(b.srb_writes[i], 1) << "delivery " << d << " SRB byte " << i;
        }
      };
      // Every local rank copies delivery d out; it must still be in the SRB, untouched.
      auto copy_out = [&](uint32_t d) {
        const Delivery& del = dels[q][d];
        for (uint32_t r = 0; r < s.ppn(q); ++r) {
          const uint32_t me = s.rank_at(q, r);
          for (const CopySpan& c : PlanCopyOutDelivery(s, q, r, st, round, del)) {
            ASSERT_GT(c.len, 0u);
            ASSERT_GE(c.src, del.srb_offset) << "delivery " << d << " r " << r << ": reads before the delivery";
            ASSERT_LE(c.src + c.len, del.srb_offset + del.bytes)
                << "delivery " << d << " r " << r << ": reads past the delivery";
            ASSERT_LE(c.dst + c.len, buf);
            for (uint64_t i = c.src; i < c.src + c.len; ++i) {
              ASSERT_EQ(b.srb_owner[i], d + 1) << "delivery " << d << " SRB byte " << i << " overwritten by delivery "
                                               << b.srb_owner[i] - 1 << " before rank " << me << " copied it out";
            }
            std::memcpy(recv[me].data() + c.dst, b.srb.data() + c.src, c.len);
            std::copy_n(b.srb_tag.begin() + c.src, c.len, recv_tag[me].begin() + c.dst);
            for (uint64_t i = 0; i < c.len; ++i) ++recv_writes[me][c.dst + i];
          }
        }
      };
      const uint32_t count = static_cast<uint32_t>(dels[q].size());
      if (algo != NodeLevelDesign::kV3) {
        for (uint32_t d = 0; d < count; ++d) {
          apply(d);
          if (::testing::Test::HasFatalFailure()) return;
        }
        for (uint32_t d = 0; d < count; ++d) {
          copy_out(d);
          if (::testing::Test::HasFatalFailure()) return;
        }
      } else if (order == V3Order::kSequential) {
        for (uint32_t d = 0; d < count; ++d) {
          apply(d);
          if (::testing::Test::HasFatalFailure()) return;
          copy_out(d);
          if (::testing::Test::HasFatalFailure()) return;
        }
      } else {
        if (count > 0) apply(0);
        if (::testing::Test::HasFatalFailure()) return;
        for (uint32_t d = 0; d < count; ++d) {
          if (d + 1 < count) apply(d + 1);
          if (::testing::Test::HasFatalFailure()) return;
          copy_out(d);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }

  for (uint32_t me = 0; me < p; ++me) {
    for (uint32_t src = 0; src < p; ++src) {
      for (uint64_t k = 0; k < m; ++k) {
        const uint64_t i = src * m + k;
        ASSERT_EQ(recv_writes[me][i], 1) << "rank " << me << " from " << src << " byte " << k;
        ASSERT_EQ(recv_tag[me][i], Tag(p, m, src, me, k)) << "rank " << me << " from " << src << " byte " << k;
        ASSERT_EQ(recv[me][i], PatternByte(src, me, k)) << "rank " << me << " from " << src << " byte " << k;
      }
    }
  }
}

// Every how many cases of the sweep below are simulated: all of them normally; under ASan
// (.bazelrc sets OHIO_SWEEP_STRIDE), where the simulation runs five times slower and checks only
// what the uninstrumented pass has already checked, a spread sample.
uint64_t SweepStride() {
  const char* stride = std::getenv("OHIO_SWEEP_STRIDE");
  return stride != nullptr && std::atoi(stride) > 1 ? static_cast<uint64_t>(std::atoi(stride)) : 1;
}

void SimulateAll(NodeLevelDesign algo, V3Order order) {
  Counts counts;
  const uint64_t stride = SweepStride();
  uint64_t case_index = 0;
  for (const RankMap& rm : TestMaps()) {
    const GroupShape s = Shape(rm.nodes, rm.rank_node);
    SCOPED_TRACE(Describe(rm, algo));
    // A group on one node stages in half its SSB.
    const uint64_t min_ssb = s.nodes() == 1 ? MinLocalSsbBytes(s) : MinSsbBytes(s);
    // (SSB, SRB) pairs. SSBs of 1, 3, 65 and 1000 times the minimum fit slices of 1, 3, 64
    // (65 rounded down to a line) and M itself.
    std::vector<std::pair<uint64_t, uint64_t>> sizes;
    if (algo == NodeLevelDesign::kV3) {
      // Halves of 64, 64, 64, 128, 448 and 32 KiB: small halves chunk most blocks.
      for (uint64_t srb : {128ull, 130ull, 200ull, 256ull, 1000ull, 1ull << 16}) sizes.push_back({1000 * min_ssb, srb});
      for (uint64_t srb : {128ull, 1000ull}) sizes.push_back({65 * min_ssb, srb});
      for (uint64_t srb : {128ull, 256ull}) sizes.push_back({3 * min_ssb, srb});
      for (uint64_t srb : {128ull, 1ull << 16}) sizes.push_back({min_ssb, srb});
    } else {
      // The SRB bounds the slice to 1, 2, 64 or not at all (1000 x the minimum).
      const uint64_t min_srb = MinSrbBytes(s, algo);
      for (uint64_t ssb : {min_ssb, 3 * min_ssb, 65 * min_ssb, 1000 * min_ssb}) sizes.push_back({ssb, 1000 * min_srb});
      for (uint64_t srb : {min_srb, 2 * min_srb + 1, 70 * min_srb}) sizes.push_back({1000 * min_ssb, srb});
      sizes.push_back({3 * min_ssb, 2 * min_srb + 1});
      sizes.push_back({65 * min_ssb, 70 * min_srb});
    }
    for (uint64_t m : kSizes) {
      for (const auto& [ssb, srb] : sizes) {
        if (case_index++ % stride != 0) continue;
        Simulate(s, algo, ssb, srb, m, order, &counts);
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
  // The sweep reaches each kind of case often (the sample: a tenth as often).
  const int often = stride == 1 ? 1000 : 100;
  EXPECT_GT(counts.single_round, often);
  EXPECT_GT(counts.multi_round, often);
  if (algo == NodeLevelDesign::kV3) {
    EXPECT_GT(counts.chunked, often);
  }
}

// Calls cut by a minimum slice (PlanGroupStaging's min_slice): rounds that carry some rows to
// some nodes. Every byte of every rank's row must still reach the right place exactly once, in
// SSBs and SRBs small enough to force the cuts, and every slice must be at least the minimum
// (or all of M), unless not even one row to one node of such slices fits the buffers.
// Every other placement of TestMaps spanning nodes (half of them keep the sweep within the
// test's time under ASan's stride too), and larger groups: 13 nodes (not a power of two), 16
// with uneven PPN, 128 nodes with two of 2 ranks.
std::vector<RankMap> CutMaps() {
  std::vector<RankMap> maps;
  int i = 0;
  for (const RankMap& rm : TestMaps()) {
    if (rm.nodes > 1 && i++ % 2 == 0) maps.push_back(rm);
  }
  maps.push_back({13, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 5, 5, 12}});
  maps.push_back({16, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 3, 3, 3, 9}});
  RankMap big{128, {}};
  for (uint32_t g = 0; g < 128; ++g) big.rank_node.push_back(g);
  big.rank_node.push_back(7);
  big.rank_node.push_back(100);
  maps.push_back(big);
  return maps;
}

void SimulateCuts(NodeLevelDesign algo, V3Order order) {
  Counts counts;
  int cut_steps = 0, cut_rows = 0, below_minimum = 0;
  const uint64_t stride = SweepStride();
  uint64_t case_index = 0;
  for (const RankMap& rm : CutMaps()) {
    const GroupShape s = Shape(rm.nodes, rm.rank_node);
    SCOPED_TRACE(Describe(rm, algo));
    const uint64_t max_ppn = s.max_ppn();
    // 128 nodes: one case, enough rounds as it is.
    const bool big = s.nodes() > 16;
    for (uint64_t min_slice : {64ull, 100ull}) {
      for (uint64_t m : {1ull, 100ull, 300ull}) {
        if (big && (min_slice != 64 || m != 100)) continue;
        // SSBs from one byte per message (cuts needed) to max PPN rows of max PPN minimum slices
        // (one node a round fits) and a little more; SRBs from the least to plenty.
        const std::vector<uint64_t> ssbs = {MinSsbBytes(s), max_ppn * min_slice - 1, max_ppn * max_ppn * min_slice,
                                            3 * max_ppn * max_ppn * min_slice + 64};
        std::vector<uint64_t> srbs;
        if (algo == NodeLevelDesign::kV3) {
          srbs = {128, 1000, 1ull << 16};
        } else {
          srbs = {MaxRemoteMessages(s), max_ppn * max_ppn * min_slice, 1ull << 24};
        }
        for (uint64_t ssb : ssbs) {
          for (uint64_t srb : srbs) {
            if (ssb < MinSsbBytes(s) || srb < MinSrbBytes(s, algo)) continue;
            if (big && (ssb != ssbs[2] || srb != srbs[1])) continue;
            if (case_index++ % stride != 0) continue;
            const Result<Staging> st = PlanGroupStaging(s, algo, ssb, srb, m, min_slice);
            ASSERT_TRUE(st.ok()) << st.status().message();
            const uint64_t wanted = std::min(min_slice, m);
            if (st->slice < wanted) {
              // Allowed only when one row to one node of `wanted`-byte slices does not fit.
              const uint64_t ssb_cap = algo == NodeLevelDesign::kV3 ? V3SsbCap(s, ssb, srb) : ssb;
              const bool srb_short = algo != NodeLevelDesign::kV3 && max_ppn * wanted > srb;
              EXPECT_TRUE(max_ppn * wanted > ssb_cap || srb_short)
                  << "M " << m << " ssb " << ssb << " srb " << srb << ": slice " << st->slice << " below " << wanted;
              ++below_minimum;
            }
            cut_steps += st->step_groups > 1;
            cut_rows += st->row_parts > 1;
            Simulate(s, algo, ssb, srb, m, order, &counts, min_slice);
            if (::testing::Test::HasFailure()) return;
          }
        }
      }
    }
  }
  const int often = stride == 1 ? 100 : 10;
  EXPECT_GT(cut_steps, often);
  EXPECT_GT(cut_rows, often);
  EXPECT_GT(below_minimum, often);
  EXPECT_GT(counts.multi_round, often);
}

TEST(ExchangePlan, SimulateCutRoundsV1) { SimulateCuts(NodeLevelDesign::kV1, V3Order::kSequential); }
TEST(ExchangePlan, SimulateCutRoundsV2) { SimulateCuts(NodeLevelDesign::kV2, V3Order::kSequential); }
TEST(ExchangePlan, SimulateCutRoundsV3Sequential) { SimulateCuts(NodeLevelDesign::kV3, V3Order::kSequential); }
TEST(ExchangePlan, SimulateCutRoundsV3Overlapped) { SimulateCuts(NodeLevelDesign::kV3, V3Order::kOverlapped); }

TEST(ExchangePlan, SimulateAlltoallV1) { SimulateAll(NodeLevelDesign::kV1, V3Order::kSequential); }
TEST(ExchangePlan, SimulateAlltoallV2) { SimulateAll(NodeLevelDesign::kV2, V3Order::kSequential); }
TEST(ExchangePlan, SimulateAlltoallV3Sequential) { SimulateAll(NodeLevelDesign::kV3, V3Order::kSequential); }
TEST(ExchangePlan, SimulateAlltoallV3Overlapped) { SimulateAll(NodeLevelDesign::kV3, V3Order::kOverlapped); }

// ---------------------------------------------------------------------------------------------
// 4. Table III of the OHIO paper: consecutive ranks, uniform PPN, one round, no chunking.

TEST(ExchangePlan, TableThreeCounts) {
  for (uint32_t nodes : {2u, 3u, 4u, 5u, 8u}) {
    for (uint32_t ppn = 1; ppn <= 4; ++ppn) {
      std::vector<uint32_t> map(nodes * ppn);
      for (uint32_t g = 0; g < map.size(); ++g) map[g] = g / ppn;
      const GroupShape s = Shape(nodes, map);
      for (uint64_t m : {1ull, 3ull, 64ull, 100ull}) {
        for (NodeLevelDesign algo : kAlgos) {
          SCOPED_TRACE(std::string(NodeLevelDesignName(algo)) + " N " + std::to_string(nodes) + " PPN " +
                       std::to_string(ppn) + " M " + std::to_string(m));
          const uint64_t ssb = MinSsbBytes(s) * m;
          const uint64_t block = uint64_t{ppn} * ppn * m;
          const uint64_t srb = algo == NodeLevelDesign::kV3 ? 2 * std::max<uint64_t>(kLine, CeilDiv(block, kLine) * kLine)
                                                      : MinSrbBytes(s, algo) * m;
          Result<Staging> st = PlanGroupStaging(s, algo, ssb, srb, m, 0);
          ASSERT_TRUE(st.ok()) << st.status().message();
          ASSERT_EQ(st->rounds, 1u);
          ASSERT_EQ(st->slice, m);
          for (uint32_t n = 0; n < nodes; ++n) {
            EXPECT_EQ(PlanDeliveries(s, algo, n, m, srb).size(), nodes - 1) << "node " << n;
            const std::vector<Put> puts = PlanPuts(s, algo, n, m, srb);
            uint64_t bytes = 0;
            for (const Put& put : puts) bytes += put.bytes;
            EXPECT_EQ(puts.size(), nodes - 1) << "node " << n;
            EXPECT_EQ(bytes, uint64_t{nodes - 1} * ppn * ppn * m) << "node " << n;
            for (const Put& put : puts) {
              EXPECT_EQ(put.bytes, block) << "node " << n;
              EXPECT_EQ(put.pieces.size(), algo == NodeLevelDesign::kV1 ? ppn : 1u) << "node " << n;
            }
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 5. Staging for groups.

template <typename Where>
void ExpectSame(const Result<Staging>& got, const Result<Staging>& want, Where where) {
  ASSERT_EQ(got.ok(), want.ok()) << where() << ": "
                                 << (got.ok() ? want.status().message() : got.status().message());
  if (!got.ok()) {
    EXPECT_EQ(got.status().code(), want.status().code()) << where();
    return;
  }
  EXPECT_EQ(got->bytes_per_rank, want->bytes_per_rank) << where();
  EXPECT_EQ(got->slice, want->slice) << where();
  EXPECT_EQ(got->rounds, want->rounds) << where();
}

std::vector<uint64_t> Around(std::vector<uint64_t> bases) {
  std::vector<uint64_t> out;
  for (uint64_t b : bases) {
    for (uint64_t v : {b - 1, b, b + 1}) {
      if (v <= b + 1) out.push_back(v);  // b - 1 wraps for b = 0
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

TEST(PlanGroupStaging, BoundsErrorsAndSingleNode) {
  int ok_multi = 0;
  int srb_bound = 0;  // v1/v2 cases where the SRB, not the SSB, set the slice
  for (const RankMap& rm : TestMaps()) {
    const GroupShape s = Shape(rm.nodes, rm.rank_node);
    const uint64_t messages = MinSsbBytes(s);
    const uint64_t remote = MaxRemoteMessages(s);
    const std::vector<uint64_t> ssbs =
        Around({0, messages, 3 * messages, 64 * messages + messages - 1, 1000 * messages, 1ull << 30});
    const std::vector<uint64_t> srbs =
        Around({0, 2 * kLine, remote, 5 * remote + 3, 64 * remote, 70 * remote, 1000 * remote, 1ull << 30});
    for (NodeLevelDesign algo : kAlgos) {
      for (uint64_t m : {0ull, 1ull, 3ull, 63ull, 64ull, 65ull, 100ull, 1000ull, 4099ull, 1ull << 40}) {
        for (uint64_t ssb : ssbs) {
          for (uint64_t srb : srbs) {
            // Only evaluated when an expectation fails.
            auto where = [&] {
              return Describe(rm, algo) + " M " + std::to_string(m) + " ssb " + std::to_string(ssb) + " srb " +
                     std::to_string(srb);
            };
            const Result<Staging> got = PlanGroupStaging(s, algo, ssb, srb, m, 0);
            if (s.nodes() == 1) {
              // One node: rounds alternate between the SSB's two halves.
              ExpectSame(got, PlanStaging(s, LocalSsbHalfBytes(ssb), m), where);
              continue;
            }
            if (algo == NodeLevelDesign::kV3) {
              if (srb < MinSrbBytes(s, algo)) {
                ASSERT_FALSE(got.ok()) << where();
                EXPECT_EQ(got.status().code(), Code::kNoMemory) << where();
              } else {
                // The SSB counts only up to kMaxDeliveries/4 halves (delivery indices must fit
                // the immediate), and never below what one byte per message needs.
                const uint64_t cap = std::max(SrbHalfBytes(srb) * (kMaxDeliveries / 4), MinSsbBytes(s));
                ExpectSame(got, PlanStaging(s, std::min(ssb, cap), m), where);
              }
              continue;
            }
            if (srb < remote || ssb < messages) {
              ASSERT_FALSE(got.ok()) << where();
              EXPECT_EQ(got.status().code(), Code::kNoMemory) << where();
              if (srb < remote) {
                EXPECT_NE(got.status().message().find(std::to_string(remote) + " remote messages"), std::string::npos)
                    << where() << ": " << got.status().message();
              }
              continue;
            }
            ASSERT_TRUE(got.ok()) << where() << ": " << got.status().message();
            ++ok_multi;
            const Staging& st = got.value();
            EXPECT_EQ(st.bytes_per_rank, m) << where();
            // The largest slice both buffers allow, rounded down to a line when M is cut.
            const uint64_t fits = std::min(ssb / messages, srb / remote);
            srb_bound += srb / remote < ssb / messages && m > srb / remote;
            const uint64_t slice = m <= fits ? m : (fits >= kLine ? fits - fits % kLine : fits);
            EXPECT_EQ(st.slice, slice) << where();
            EXPECT_EQ(st.rounds, m == 0 ? 1 : CeilDiv(m, slice)) << where();
            for (uint32_t n = 0; n < s.nodes(); ++n) {
              EXPECT_LE(SsbRoundBytes(s, n, st.slice), ssb) << where() << " node " << n;
              uint64_t in = 0;
              for (uint32_t q = 0; q < s.nodes(); ++q) {
                if (q != n) in += BlockBytes(s, q, n, st.slice);
              }
              EXPECT_LE(in, srb) << where() << " node " << n << " receives more than the SRB per round";
            }
          }
        }
      }
      if (::testing::Test::HasFailure()) return;
    }
  }
  EXPECT_GT(ok_multi, 10000);
  EXPECT_GT(srb_bound, 1000);
}

// v3 takes the SRB only for its minimum: any SRB from two lines up plans as PlanStaging does.
TEST(PlanGroupStaging, V3IgnoresTheSrbAboveItsMinimum) {
  const GroupShape s = Shape(2, {0, 1, 1, 0, 1});
  for (uint64_t srb = 0; srb < 300; ++srb) {
    for (uint64_t m : {0ull, 7ull, 4096ull}) {
      const Result<Staging> got = PlanGroupStaging(s, NodeLevelDesign::kV3, 1000, srb, m, 0);
      if (srb < 2 * kLine) {
        ASSERT_FALSE(got.ok()) << "srb " << srb;
        EXPECT_EQ(got.status().code(), Code::kNoMemory);
      } else {
        ExpectSame(got, PlanStaging(s, 1000, m), [&] { return "srb " + std::to_string(srb) + " M " + std::to_string(m); });
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 6. The immediate of a put.

TEST(Imm, RoundTrips) {
  std::vector<uint32_t> deliveries = {0, 1, 2, 3, 63, 64, 1000, kMaxDeliveries / 2, kMaxDeliveries - 2,
                                      kMaxDeliveries - 1};
  for (uint32_t d = 5; d < kMaxDeliveries; d += 4093) deliveries.push_back(d);
  for (uint32_t tag = 0; tag < kMaxGroupTags; ++tag) {
    for (uint32_t d : deliveries) {
      const uint32_t imm = EncodeImm(tag, d);
      ASSERT_EQ(ImmTag(imm), tag) << "tag " << tag << " delivery " << d;
      ASSERT_EQ(ImmDelivery(imm), d) << "tag " << tag << " delivery " << d;
    }
  }
  // Every delivery index for a few tags, and every tag for every low delivery.
  for (uint32_t tag : {0u, 1u, kMaxGroupTags / 2, kMaxGroupTags - 1}) {
    for (uint32_t d = 0; d < kMaxDeliveries; ++d) {
      const uint32_t imm = EncodeImm(tag, d);
      if (ImmTag(imm) != tag || ImmDelivery(imm) != d) FAIL() << "tag " << tag << " delivery " << d;
    }
  }
  EXPECT_EQ(uint64_t{kMaxGroupTags} * kMaxDeliveries, uint64_t{1} << 32);
  EXPECT_EQ(EncodeImm(kMaxGroupTags - 1, kMaxDeliveries - 1), 0xFFFFFFFFu);
  EXPECT_EQ(EncodeImm(0, 0), 0u);
}

}  // namespace
}  // namespace ohio

namespace ohio {
namespace {

// Found by the simulation: a tiny SRB with a huge SSB used to plan more deliveries than a
// 32-bit immediate can number (delivery 4194304 encoded as tag+1, delivery 0).
TEST(PlanGroupStagingLimits, DeliveriesAlwaysFitTheImmediate) {
  auto shape = GroupShape::Make(2, {0, 1});
  ASSERT_TRUE(shape.ok());
  const uint64_t ssb = (uint64_t{1} << 29) + 128, srb = 128, m = (uint64_t{1} << 28) + 64;
  auto staging = PlanGroupStaging(shape.value(), NodeLevelDesign::kV3, ssb, srb, m, 0);
  ASSERT_TRUE(staging.ok());
  for (uint64_t round : {uint64_t{0}, staging->rounds - 1}) {
    for (uint32_t node = 0; node < 2; ++node) {
      auto d = PlanDeliveries(shape.value(), NodeLevelDesign::kV3, node, staging->length(round), srb);
      EXPECT_LT(d.size(), kMaxRendezvousDeliveries) << "round " << round;
    }
  }
}

TEST(PlanDeliveriesLimits, TerminatesEvenForAnSrbBelowTheMinimum) {
  auto shape = GroupShape::Make(2, {0, 1});
  ASSERT_TRUE(shape.ok());
  auto d = PlanDeliveries(shape.value(), NodeLevelDesign::kV3, 0, 3, 1);
  EXPECT_EQ(d.size(), 3u);
}

}  // namespace
}  // namespace ohio
