// The alltoallv planner (shm/plan/vector_plan.h), simulated end to end for every placement of up to
// 4 ranks on up to 4 nodes and a few uneven larger ones: ranks stage their rows, every node
// gathers its puts into its peers' slots, ranks copy out by their own node's tables, and every
// received byte and every gap is checked; a pair that disagrees makes the digests' sum non-zero;
// a row or block too large for the buffers does not fit, at both ends of the pair. A call that
// does not fit is simulated over its stream rounds (shm/plan/vector_staging.h) on buffers of a few
// hundred bytes, with skewed pairs, and checked the same way, round by round.
#include "shm/plan/vector_plan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/mix64.h"
#include "shm/plan/vector_staging.h"
#include "tests/unit/plan/rank_maps.h"

namespace ohio {
namespace {

using testing_util::AllValidMaps;
using testing_util::MapName;
using testing_util::RankMap;

constexpr uint8_t kGap = 0xEE;
constexpr uint64_t kGapBytes = 3;

GroupShape Shape(const RankMap& rm) {
  Result<GroupShape> r = GroupShape::Make(rm.nodes, rm.rank_node);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.value();
}

std::vector<RankMap> TestMaps() {
  std::vector<RankMap> maps = AllValidMaps(4, 4);
  const std::vector<RankMap> extra = {
      {3, {0, 2, 1, 0, 2, 0}}, {5, {4, 0, 0, 3, 1, 2}}, {2, {1, 0, 0, 0, 1}}, {8, {7, 6, 5, 4, 3, 2, 1, 0, 0}}};
  maps.insert(maps.end(), extra.begin(), extra.end());
  return maps;
}

// Bytes rank a sends rank b: a quarter of the pairs none.
size_t Count(uint32_t a, uint32_t b, uint64_t seed) {
  const uint64_t h = Mix64(seed ^ (uint64_t{a} << 20 | b));
  return h % 4 == 0 ? 0 : (h >> 8) % 200;
}

uint8_t Pattern(uint32_t a, uint32_t b, uint64_t i) { return static_cast<uint8_t>(a * 131 + b * 31 + i * 7 + 1); }

struct Rank {
  std::vector<size_t> send_counts, send_displs, recv_counts, recv_displs;
  std::vector<uint8_t> send, recv;
};

// Blocks in reverse rank order, a gap after each.
void Lay(const std::vector<size_t>& counts, std::vector<size_t>* displs, std::vector<uint8_t>* buffer) {
  displs->assign(counts.size(), 0);
  uint64_t at = kGapBytes;
  for (size_t k = counts.size(); k-- > 0;) {
    (*displs)[k] = at;
    at += counts[k] + kGapBytes;
  }
  buffer->assign(at, kGap);
}

// Counts by Count, but rank 0 sends the last rank `skew` bytes when that is not 0.
std::vector<Rank> MakeRanks(const GroupShape& shape, uint64_t seed, size_t skew = 0) {
  std::vector<Rank> ranks(shape.size());
  const uint32_t last = shape.size() - 1;
  auto count = [&](uint32_t a, uint32_t b) { return skew != 0 && a == 0 && b == last ? skew : Count(a, b, seed); };
  for (uint32_t a = 0; a < shape.size(); ++a) {
    Rank& r = ranks[a];
    for (uint32_t b = 0; b < shape.size(); ++b) {
      r.send_counts.push_back(count(a, b));
      r.recv_counts.push_back(count(b, a));
    }
    Lay(r.send_counts, &r.send_displs, &r.send);
    Lay(r.recv_counts, &r.recv_displs, &r.recv);
    for (uint32_t b = 0; b < shape.size(); ++b) {
      for (size_t i = 0; i < r.send_counts[b]; ++i) r.send[r.send_displs[b] + i] = Pattern(a, b, i);
    }
  }
  return ranks;
}

std::vector<std::vector<CountEntry>> Tables(const GroupShape& shape, const std::vector<Rank>& ranks) {
  std::vector<std::vector<CountEntry>> tables(shape.nodes());
  for (uint32_t n = 0; n < shape.nodes(); ++n) {
    for (uint32_t l = 0; l < shape.ppn(n); ++l) {
      const Rank& r = ranks[shape.rank_at(n, l)];
      for (uint32_t j = 0; j < shape.size(); ++j) {
        tables[n].push_back(CountEntry{r.send_counts[j], r.send_displs[j], r.recv_counts[j]});
      }
    }
  }
  return tables;
}

NodeCounts CountsOf(const GroupShape& shape, const std::vector<std::vector<CountEntry>>& tables, uint32_t n) {
  return NodeCounts{tables[n].data(), shape.size()};
}

// Every byte each rank received is the one its sender sent, and every gap is untouched.
void ExpectEveryByteReceived(const GroupShape& shape, const std::vector<Rank>& ranks) {
  for (uint32_t b = 0; b < shape.size(); ++b) {
    const Rank& r = ranks[b];
    for (uint32_t a = 0; a < shape.size(); ++a) {
      for (size_t i = 0; i < r.recv_counts[a]; ++i) {
        ASSERT_EQ(r.recv[r.recv_displs[a] + i], Pattern(a, b, i)) << "rank " << b << " from " << a << " byte " << i;
      }
      for (uint64_t g = 0; g < kGapBytes; ++g) ASSERT_EQ(r.recv[r.recv_displs[a] + r.recv_counts[a] + g], kGap);
    }
  }
}

TEST(VectorPlan, EveryByteLandsWhereTheReceiverExpectsIt) {
  std::vector<CopySpan> spans;  // one for every plan, as a rank keeps one: nothing stale may show
  for (const RankMap& rm : TestMaps()) {
    for (uint64_t seed : {1, 2}) {
      const GroupShape shape = Shape(rm);
      SCOPED_TRACE(MapName(rm.rank_node) + " over " + std::to_string(rm.nodes) + " seed " + std::to_string(seed));
      const EagerLayout layout = PlanEagerLayout(shape, 1 << 20, 1 << 20);
      std::vector<Rank> ranks = MakeRanks(shape, seed);
      const auto tables = Tables(shape, ranks);
      std::vector<std::vector<uint8_t>> ssb(shape.nodes(), std::vector<uint8_t>(layout.ssb_half, 0));
      std::vector<std::vector<uint8_t>> srb(shape.nodes(), std::vector<uint8_t>(layout.srb_half, 0));
      uint64_t digest = 0, wire = 0;
      for (uint32_t n = 0; n < shape.nodes(); ++n) {
        const NodeCounts counts = CountsOf(shape, tables, n);
        ASSERT_TRUE(VectorFits(shape, layout, n, counts));
        digest += VectorCountDigest(shape, n, counts);
        const uint64_t region = VectorRegionBytes(shape, layout, n);
        for (uint32_t l = 0; l < shape.ppn(n); ++l) {
          const Rank& r = ranks[shape.rank_at(n, l)];
          PlanVectorCopyIn(shape, r.send_counts.data(), r.send_displs.data(), &spans);
          for (const CopySpan& s : spans) {
            ASSERT_LE(s.dst + s.len, region);
            std::memcpy(ssb[n].data() + l * region + s.dst, r.send.data() + s.src, s.len);
          }
        }
      }
      EXPECT_EQ(digest, 0u) << "every pair agrees";
      for (uint32_t n = 0; n < shape.nodes(); ++n) {
        const NodeCounts counts = CountsOf(shape, tables, n);
        for (const Put& p : PlanVectorPuts(shape, n, layout, counts)) {
          uint64_t at = p.srb_offset + kEagerHeaderBytes;
          EXPECT_EQ(p.bytes, VectorSendBlockBytes(shape, n, counts, p.dest));
          for (const SsbPiece& piece : p.pieces) {
            ASSERT_GT(piece.bytes, 0u) << "zero counts take no room";
            ASSERT_LE(at + piece.bytes, layout.srb_half);
            std::memcpy(srb[p.dest].data() + at, ssb[n].data() + piece.ssb_offset, piece.bytes);
            at += piece.bytes;
          }
          wire += p.bytes;
        }
      }
      uint64_t remote = 0;
      for (uint32_t n = 0; n < shape.nodes(); ++n) {
        const NodeCounts counts = CountsOf(shape, tables, n);
        for (const Delivery& d : PlanVectorDeliveries(shape, n, layout, counts)) {
          EXPECT_EQ(d.bytes, VectorSendBlockBytes(shape, d.source, CountsOf(shape, tables, d.source), n));
          remote += d.bytes;
        }
        for (uint32_t l = 0; l < shape.ppn(n); ++l) {
          Rank& r = ranks[shape.rank_at(n, l)];
          PlanVectorCopyOutOnNode(shape, n, l, layout, counts, r.recv_displs.data(), &spans);
          for (const CopySpan& s : spans) {
            std::memcpy(r.recv.data() + s.dst, ssb[n].data() + s.src, s.len);
          }
          for (uint32_t source = 0; source < shape.nodes(); ++source) {
            if (source == n) continue;
            const uint8_t* block = srb[n].data() + EagerSlotOffset(layout, n, source, 0) + kEagerHeaderBytes;
            PlanVectorCopyOutBlock(shape, n, l, counts, source, r.recv_displs.data(), &spans);
            for (const CopySpan& s : spans) {
              std::memcpy(r.recv.data() + s.dst, block + s.src, s.len);
            }
          }
        }
      }
      EXPECT_EQ(remote, wire);
      ExpectEveryByteReceived(shape, ranks);
    }
  }
}

// Bytes between ranks on different nodes: what the wire must carry, all rounds together.
uint64_t RemoteBytes(const GroupShape& shape, const std::vector<Rank>& ranks) {
  uint64_t bytes = 0;
  for (uint32_t a = 0; a < shape.size(); ++a) {
    for (uint32_t b = 0; b < shape.size(); ++b) {
      if (shape.node_of(a) != shape.node_of(b)) bytes += ranks[a].send_counts[b];
    }
  }
  return bytes;
}

// The stream rounds of a call, simulated: each round's halves start dirty, so a byte read
// from where no round put one shows. Stream round 0 is the call's first round, in which a rank
// whose row fits its region stages it whole, as the ranks do before they know whether their
// node streams.
void SimulateStreamRounds(const GroupShape& shape, const EagerLayout& layout, std::vector<Rank>& ranks,
                          uint64_t* rounds_out, uint64_t* wire_out) {
  const auto tables = Tables(shape, ranks);
  uint64_t rounds = 0;
  for (uint32_t n = 0; n < shape.nodes(); ++n) {
    uint64_t r = 0;
    ASSERT_TRUE(VectorStreamRounds(shape, layout, n, CountsOf(shape, tables, n), &r));
    rounds = std::max(rounds, r);
  }
  std::vector<CopySpan> spans;
  std::vector<Put> puts;
  std::vector<Delivery> deliveries;
  uint64_t wire = 0;
  for (uint64_t s = 0; s < rounds; ++s) {
    SCOPED_TRACE("stream round " + std::to_string(s));
    std::vector<std::vector<uint8_t>> ssb(shape.nodes(), std::vector<uint8_t>(layout.ssb_half, 0xA5));
    std::vector<std::vector<uint8_t>> srb(shape.nodes(), std::vector<uint8_t>(layout.srb_half, 0x5A));
    for (uint32_t n = 0; n < shape.nodes(); ++n) {
      const uint64_t region = VectorRegionBytes(shape, layout, n);
      for (uint32_t l = 0; l < shape.ppn(n); ++l) {
        const Rank& r = ranks[shape.rank_at(n, l)];
        if (s == 0 && VectorRowFits(shape, tables[n].data() + uint64_t{l} * shape.size(), region)) {
          PlanVectorCopyIn(shape, r.send_counts.data(), r.send_displs.data(), &spans);
        } else {
          PlanVectorStreamCopyIn(shape, layout, n, s, r.send_counts.data(), r.send_displs.data(), &spans);
        }
        for (const CopySpan& c : spans) {
          ASSERT_GT(c.len, 0u);
          ASSERT_LE(c.dst + c.len, region);
          std::memcpy(ssb[n].data() + l * region + c.dst, r.send.data() + c.src, c.len);
        }
      }
    }
    std::vector<std::vector<uint64_t>> put_bytes(shape.nodes(), std::vector<uint64_t>(shape.nodes(), 0));
    for (uint32_t n = 0; n < shape.nodes(); ++n) {
      PlanVectorStreamPuts(shape, n, layout, CountsOf(shape, tables, n), s, &puts);
      ASSERT_EQ(puts.size(), shape.nodes() - 1u);
      for (const Put& p : puts) {
        uint64_t at = p.srb_offset + kEagerHeaderBytes;
        for (const SsbPiece& piece : p.pieces) {
          ASSERT_GT(piece.bytes, 0u) << "empty chunks take no room";
          ASSERT_LE(at + piece.bytes, p.srb_offset + layout.slot) << "the block fits its slot";
          std::memcpy(srb[p.dest].data() + at, ssb[n].data() + piece.ssb_offset, piece.bytes);
          at += piece.bytes;
        }
        put_bytes[n][p.dest] = p.bytes;
        wire += p.bytes;
      }
    }
    for (uint32_t n = 0; n < shape.nodes(); ++n) {
      const NodeCounts counts = CountsOf(shape, tables, n);
      PlanVectorStreamDeliveries(shape, n, layout, counts, s, &deliveries);
      for (const Delivery& d : deliveries) EXPECT_EQ(d.bytes, put_bytes[d.source][n]) << d.source << " to " << n;
      for (uint32_t l = 0; l < shape.ppn(n); ++l) {
        Rank& r = ranks[shape.rank_at(n, l)];
        PlanVectorStreamCopyOutOnNode(shape, n, l, layout, counts, s, r.recv_displs.data(), &spans);
        for (const CopySpan& c : spans) std::memcpy(r.recv.data() + c.dst, ssb[n].data() + c.src, c.len);
        for (uint32_t source = 0; source < shape.nodes(); ++source) {
          if (source == n) continue;
          const uint8_t* block = srb[n].data() + EagerSlotOffset(layout, n, source, 0) + kEagerHeaderBytes;
          PlanVectorStreamCopyOutBlock(shape, n, l, layout, counts, source, s, r.recv_displs.data(), &spans);
          for (const CopySpan& c : spans) std::memcpy(r.recv.data() + c.dst, block + c.src, c.len);
        }
      }
    }
  }
  *rounds_out = rounds;
  *wire_out = wire;
}

// The rounds the longest stream of the group needs, by its definition: the bytes one rank sends
// the ranks of one node, in slices of its node's.
uint64_t LongestStreamRounds(const GroupShape& shape, const EagerLayout& layout, const std::vector<Rank>& ranks) {
  uint64_t rounds = 0;
  for (uint32_t a = 0; a < shape.size(); ++a) {
    const uint64_t slice = VectorStreamSlice(shape, layout, shape.node_of(a));
    for (uint32_t j = 0; j < shape.nodes(); ++j) {
      uint64_t bytes = 0;
      for (uint32_t i = 0; i < shape.ppn(j); ++i) bytes += ranks[a].send_counts[shape.rank_at(j, i)];
      rounds = std::max(rounds, (bytes + slice - 1) / slice);
    }
  }
  return rounds;
}

TEST(VectorStaging, EveryByteLandsWhereTheReceiverExpectsItOverSeveralRounds) {
  for (const RankMap& rm : TestMaps()) {
    for (const size_t skew : {size_t{0}, size_t{5000}}) {
      for (uint64_t seed : {1, 2}) {
        const GroupShape shape = Shape(rm);
        SCOPED_TRACE(MapName(rm.rank_node) + " over " + std::to_string(rm.nodes) + " seed " + std::to_string(seed) +
                     " skew " + std::to_string(skew));
        // Halves of 1 KiB: slices of 64 to 512 bytes, so counts of up to 200 bytes take a few
        // rounds and the skewed pair many more.
        const EagerLayout layout = PlanEagerLayout(shape, 2048, 2048);
        std::vector<Rank> ranks = MakeRanks(shape, seed, skew);
        uint64_t rounds = 0, wire = 0;
        SimulateStreamRounds(shape, layout, ranks, &rounds, &wire);
        EXPECT_EQ(rounds, LongestStreamRounds(shape, layout, ranks));
        EXPECT_GT(rounds, skew != 0 ? 1u : 0u);
        EXPECT_EQ(wire, RemoteBytes(shape, ranks)) << "the wire carries the non-empty pairs' bytes, each once";
        ExpectEveryByteReceived(shape, ranks);
      }
    }
  }
}

TEST(VectorStaging, OnlyTheNonEmptyPairsCostAnything) {
  const GroupShape shape = Shape({3, {0, 2, 1, 0, 2, 0}});
  const EagerLayout layout = PlanEagerLayout(shape, 2048, 2048);
  // Nothing at all: no stream round, no piece, no copy.
  std::vector<Rank> none = MakeRanks(shape, 0);
  for (Rank& r : none) {
    std::fill(r.send_counts.begin(), r.send_counts.end(), 0);
    std::fill(r.recv_counts.begin(), r.recv_counts.end(), 0);
  }
  const auto tables = Tables(shape, none);
  for (uint32_t n = 0; n < shape.nodes(); ++n) {
    uint64_t rounds = 1;
    EXPECT_TRUE(VectorStreamRounds(shape, layout, n, CountsOf(shape, tables, n), &rounds));
    EXPECT_EQ(rounds, 0u);
  }
  // One pair only, rank 1 (node 2) to rank 2 (node 1): its stream alone, in as many rounds as
  // its slices, one piece a round.
  std::vector<Rank> one = none;
  const uint32_t from = 1, to = 2;
  one[from].send_counts[to] = one[to].recv_counts[from] = 1000;
  for (uint32_t r : {from, to}) {
    Lay(one[r].send_counts, &one[r].send_displs, &one[r].send);
    Lay(one[r].recv_counts, &one[r].recv_displs, &one[r].recv);
  }
  for (size_t i = 0; i < 1000; ++i) one[from].send[one[from].send_displs[to] + i] = Pattern(from, to, i);
  const auto one_tables = Tables(shape, one);
  const uint32_t node = shape.node_of(from);
  const uint64_t slice = VectorStreamSlice(shape, layout, node);
  ASSERT_GT(slice, 0u);
  std::vector<Put> puts;
  for (uint64_t s = 0; s < (1000 + slice - 1) / slice; ++s) {
    for (uint32_t n = 0; n < shape.nodes(); ++n) {
      PlanVectorStreamPuts(shape, n, layout, CountsOf(shape, one_tables, n), s, &puts);
      for (const Put& p : puts) {
        const bool carries = n == node && p.dest == shape.node_of(to);
        EXPECT_EQ(p.pieces.size(), carries ? 1u : 0u) << "node " << n << " to " << p.dest << " round " << s;
        EXPECT_EQ(p.bytes, carries ? VectorStreamChunk(1000, slice, s) : 0u);
      }
    }
  }
  uint64_t rounds = 0, wire = 0;
  SimulateStreamRounds(shape, layout, one, &rounds, &wire);
  EXPECT_EQ(rounds, (1000 + slice - 1) / slice);
  EXPECT_EQ(wire, 1000u);
  ExpectEveryByteReceived(shape, one);
}

TEST(VectorStaging, ACallOfTooManyRoundsIsRefusedWithoutWrappingAround) {
  const GroupShape shape = Shape({2, {0, 1, 0}});
  const EagerLayout layout = PlanEagerLayout(shape, 2048, 2048);
  const uint64_t slice = VectorStreamSlice(shape, layout, 0);
  std::vector<CountEntry> table(2 * shape.size(), CountEntry{0, 0, 0});
  const NodeCounts counts{table.data(), shape.size()};
  uint64_t rounds = 0;
  table[1].bytes = slice * kMaxVectorStreamRounds;  // the most rounds served, exactly
  EXPECT_TRUE(VectorStreamRounds(shape, layout, 0, counts, &rounds));
  EXPECT_EQ(rounds, kMaxVectorStreamRounds);
  table[1].bytes += 1;
  EXPECT_FALSE(VectorStreamRounds(shape, layout, 0, counts, &rounds));
  // Two counts to the same node (ranks 0 and 2) whose sum wraps around to something small.
  table[1].bytes = 0;
  table[0].bytes = 64;
  table[2].bytes = ~uint64_t{0} - 10;
  EXPECT_FALSE(VectorStreamRounds(shape, layout, 0, counts, &rounds));
  // Buffers that cannot hold a byte of every stream: nothing to send is still nothing.
  const EagerLayout none = PlanEagerLayout(shape, 64, 2048);
  EXPECT_EQ(VectorStreamSlice(shape, none, 0), 0u);
  std::vector<CountEntry> empty(2 * shape.size(), CountEntry{0, 0, 0});
  EXPECT_TRUE(VectorStreamRounds(shape, none, 0, NodeCounts{empty.data(), shape.size()}, &rounds));
  EXPECT_EQ(rounds, 0u);
  EXPECT_FALSE(VectorStreamRounds(shape, none, 0, counts, &rounds));
}

TEST(VectorStaging, TheFirstRoundsVerdictSaysWhichNodesStream) {
  // What the rank and the daemon playing it both read after a call's first round k = 9: the
  // segment's word of k's parity and each other node's header in the SRB half.
  const GroupShape shape = Shape({3, {0, 1, 2, 1}});
  const EagerLayout layout = PlanEagerLayout(shape, 1 << 16, 1 << 16);
  std::vector<uint8_t> srb_half(layout.srb_half, 0);
  for (uint32_t source : {0u, 2u}) {
    EagerHeader h{};
    h.flags = source == 2 ? kEagerVectorStaged : 0u;
    std::memcpy(srb_half.data() + EagerSlotOffset(layout, 1, source, 0), &h, sizeof(h));
  }
  const VectorStreams streams = VectorStreamsOf(uint64_t{9} << 32 | kVectorSomePartStreams | kVectorOwnPartStaged | 4, 9);
  EXPECT_TRUE(streams.any);
  EXPECT_EQ(streams.rounds, 4u);
  EXPECT_TRUE(streams.own_staged);
  std::vector<bool> streaming = {true};  // what a call before left
  PlanStreamingNodes(shape, layout, 1, srb_half.data(), streams, &streaming);
  EXPECT_EQ(streaming, (std::vector<bool>{false, true, true}));
  // A word of an older round (even one 2^32 rounds back would have been overwritten by round 9's
  // own): nothing streams, and the headers are not read.
  const VectorStreams none = VectorStreamsOf(uint64_t{7} << 32 | kVectorSomePartStreams | kVectorOwnPartStaged | 4, 9);
  EXPECT_FALSE(none.any);
  EXPECT_EQ(none.rounds, 0u);
  EXPECT_FALSE(none.own_staged);
  PlanStreamingNodes(shape, layout, 1, nullptr, none, &streaming);
  EXPECT_EQ(streaming, (std::vector<bool>{false, false, false}));
  // Node 2's part did not fit but its streams each fit one slice: the first round carried them
  // all as its stream round 0, no round follows, and node 2's block is still read as a stream.
  const VectorStreams first_only = VectorStreamsOf(uint64_t{9} << 32 | kVectorSomePartStreams, 9);
  EXPECT_TRUE(first_only.any);
  EXPECT_EQ(first_only.rounds, 0u);
  EXPECT_FALSE(first_only.own_staged);
  PlanStreamingNodes(shape, layout, 1, srb_half.data(), first_only, &streaming);
  EXPECT_EQ(streaming, (std::vector<bool>{false, false, true}));
  // Round 9 was the whole call: its own word says no node streams, and the headers are not read.
  const VectorStreams whole = VectorStreamsOf(uint64_t{9} << 32, 9);
  EXPECT_FALSE(whole.any);
  EXPECT_EQ(whole.rounds, 0u);
  PlanStreamingNodes(shape, layout, 1, nullptr, whole, &streaming);
  EXPECT_EQ(streaming, (std::vector<bool>{false, false, false}));
}

TEST(VectorPlan, ARanksCopyPlansReuseTheRoomOfTheCallBefore) {
  const GroupShape shape = Shape({3, {0, 2, 1, 0, 2, 0}});
  const EagerLayout layout = PlanEagerLayout(shape, 1 << 20, 1 << 20);
  const std::vector<Rank> ranks = MakeRanks(shape, 5);
  const auto tables = Tables(shape, ranks);
  const uint32_t n = 0, l = 1;
  const Rank& r = ranks[shape.rank_at(n, l)];
  std::vector<CopySpan> spans;
  // The first call grows the vector to its largest plan; the calls after it plan into that room.
  spans.reserve(shape.size());
  const CopySpan* room = spans.data();
  for (int call = 0; call < 3; ++call) {
    PlanVectorCopyIn(shape, r.send_counts.data(), r.send_displs.data(), &spans);
    EXPECT_FALSE(spans.empty());
    PlanVectorCopyOutOnNode(shape, n, l, layout, CountsOf(shape, tables, n), r.recv_displs.data(), &spans);
    EXPECT_FALSE(spans.empty());
    for (uint32_t source = 1; source < shape.nodes(); ++source) {
      PlanVectorCopyOutBlock(shape, n, l, CountsOf(shape, tables, n), source, r.recv_displs.data(), &spans);
    }
    EXPECT_EQ(spans.data(), room) << "call " << call << " allocated";
  }
}

TEST(VectorPlan, APairThatDisagreesMakesTheDigestsSumNonZero) {
  for (const RankMap& rm : TestMaps()) {
    const GroupShape shape = Shape(rm);
    SCOPED_TRACE(MapName(rm.rank_node) + " over " + std::to_string(rm.nodes));
    for (uint32_t b = 0; b < shape.size(); ++b) {
      for (uint32_t a = 0; a < shape.size(); ++a) {
        std::vector<Rank> ranks = MakeRanks(shape, 3);
        ranks[b].recv_counts[a] += 1;
        const auto tables = Tables(shape, ranks);
        uint64_t digest = 0;
        for (uint32_t n = 0; n < shape.nodes(); ++n) digest += VectorCountDigest(shape, n, CountsOf(shape, tables, n));
        EXPECT_NE(digest, 0u) << "rank " << b << " expects one byte more from rank " << a;
      }
    }
  }
}

TEST(VectorPlan, BothEndsOfAPairAgreeWhetherItFits) {
  const GroupShape shape = Shape({3, {0, 2, 1, 0, 2, 0}});
  const std::vector<Rank> ranks = MakeRanks(shape, 5);
  const auto tables = Tables(shape, ranks);
  for (uint32_t a = 0; a < shape.nodes(); ++a) {
    for (uint32_t b = 0; b < shape.nodes(); ++b) {
      if (a == b) continue;
      // What a sends b, by a's tables, is what b expects of a, by b's: both ends compare the
      // same two numbers with the same slot.
      EXPECT_EQ(VectorSendBlockBytes(shape, a, CountsOf(shape, tables, a), b),
                VectorRecvBlockBytes(shape, b, CountsOf(shape, tables, b), a));
    }
  }
  const EagerLayout large = PlanEagerLayout(shape, 1 << 20, 16384);
  const EagerLayout no_room = PlanEagerLayout(shape, 1 << 20, 128);  // slots under a header
  for (uint32_t n = 0; n < shape.nodes(); ++n) {
    EXPECT_TRUE(VectorFits(shape, large, n, CountsOf(shape, tables, n))) << n;
    EXPECT_FALSE(VectorFits(shape, no_room, n, CountsOf(shape, tables, n))) << n;
  }
  // A row larger than the rank's region of the SSB half does not fit.
  const EagerLayout tiny_ssb = PlanEagerLayout(shape, 512, 1 << 20);
  EXPECT_FALSE(VectorFits(shape, tiny_ssb, 0, CountsOf(shape, tables, 0)));
  // Nor do counts whose sum wraps around to something small.
  auto wrapping = tables;
  wrapping[0][0].bytes = ~uint64_t{0};
  wrapping[0][1].bytes = 1;
  EXPECT_FALSE(VectorFits(shape, large, 0, CountsOf(shape, wrapping, 0)));
}

// Every field of every put and piece.
void ExpectSamePuts(const std::vector<Put>& got, const std::vector<Put>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].dest, want[i].dest);
    EXPECT_EQ(got[i].step, want[i].step);
    EXPECT_EQ(got[i].delivery, want[i].delivery);
    EXPECT_EQ(got[i].bytes, want[i].bytes);
    EXPECT_EQ(got[i].srb_offset, want[i].srb_offset);
    ASSERT_EQ(got[i].pieces.size(), want[i].pieces.size());
    for (size_t k = 0; k < want[i].pieces.size(); ++k) {
      EXPECT_EQ(got[i].pieces[k].ssb_offset, want[i].pieces[k].ssb_offset);
      EXPECT_EQ(got[i].pieces[k].bytes, want[i].pieces[k].bytes);
    }
  }
}

// A kept plan must be the plan the tables would get now: every field of every put and delivery.
void ExpectPlannedFrom(const GroupShape& shape, uint32_t node, const EagerLayout& layout,
                       const std::vector<CountEntry>& table, const VectorRoundPlan& plan) {
  const NodeCounts counts{table.data(), shape.size()};
  ExpectSamePuts(plan.puts, PlanVectorPuts(shape, node, layout, counts));
  const std::vector<Delivery> deliveries = PlanVectorDeliveries(shape, node, layout, counts);
  ASSERT_EQ(plan.deliveries.size(), deliveries.size());
  for (size_t i = 0; i < deliveries.size(); ++i) {
    EXPECT_EQ(plan.deliveries[i].source, deliveries[i].source);
    EXPECT_EQ(plan.deliveries[i].step, deliveries[i].step);
    EXPECT_EQ(plan.deliveries[i].block_offset, deliveries[i].block_offset);
    EXPECT_EQ(plan.deliveries[i].bytes, deliveries[i].bytes);
    EXPECT_EQ(plan.deliveries[i].srb_offset, deliveries[i].srb_offset);
  }
  // Every put found by its destination (the hypercube alltoallv gathers a node's own blocks so).
  ASSERT_EQ(plan.put_of_dest.size(), shape.nodes());
  for (uint32_t i = 0; i < plan.puts.size(); ++i) EXPECT_EQ(plan.put_of_dest[plan.puts[i].dest], i);
  EXPECT_EQ(plan.digest, VectorCountDigest(shape, node, counts));
  EXPECT_EQ(plan.local_bytes, VectorLocalBytes(shape, node, counts));
  uint64_t sent = 0;
  for (uint32_t l = 0; l < shape.ppn(node); ++l) sent += VectorRowBytes(shape, counts.of(l));
  EXPECT_EQ(plan.sent_bytes, sent);
}

TEST(VectorPlan, ARoundWithTheSameCountsKeepsThePlanAndAnyChangedCountPlansAgain) {
  const GroupShape shape = Shape({3, {0, 2, 1, 0, 2, 0}});
  const EagerLayout layout = PlanEagerLayout(shape, 1 << 20, 16384);
  for (uint32_t n = 0; n < shape.nodes(); ++n) {
    SCOPED_TRACE("node " + std::to_string(n));
    auto tables = Tables(shape, MakeRanks(shape, 5));
    VectorRoundPlan plan;
    EXPECT_TRUE(UpdateVectorRoundPlan(shape, n, layout, tables[n].data(), &plan));
    ASSERT_TRUE(plan.fits);
    ExpectPlannedFrom(shape, n, layout, tables[n], plan);
    // The same counts, and the same counts at other displacements: kept, nothing allocated.
    const Put* puts = plan.puts.data();
    const Delivery* deliveries = plan.deliveries.data();
    EXPECT_FALSE(UpdateVectorRoundPlan(shape, n, layout, tables[n].data(), &plan));
    for (CountEntry& e : tables[n]) e.displacement += 64;
    EXPECT_FALSE(UpdateVectorRoundPlan(shape, n, layout, tables[n].data(), &plan));
    EXPECT_EQ(plan.puts.data(), puts);
    EXPECT_EQ(plan.deliveries.data(), deliveries);
    ExpectPlannedFrom(shape, n, layout, tables[n], plan);
    // Any one count, sent or expected, of any local rank: planned again, as fresh.
    for (size_t i = 0; i < tables[n].size(); ++i) {
      for (const bool sent : {true, false}) {
        uint64_t& count = sent ? tables[n][i].bytes : tables[n][i].recv_bytes;
        count += 1;
        EXPECT_TRUE(UpdateVectorRoundPlan(shape, n, layout, tables[n].data(), &plan)) << i << " " << sent;
        ExpectPlannedFrom(shape, n, layout, tables[n], plan);
        count -= 1;
        EXPECT_TRUE(UpdateVectorRoundPlan(shape, n, layout, tables[n].data(), &plan)) << i << " " << sent;
      }
    }
    // Counts that do not fit: the first round puts stream round 0, the digest still counted,
    // and the stream rounds the node's part needs; fitting again plans again.
    auto too_large = tables[n];
    too_large[0].bytes = 1 << 20;
    EXPECT_TRUE(UpdateVectorRoundPlan(shape, n, layout, too_large.data(), &plan));
    EXPECT_FALSE(plan.fits);
    EXPECT_TRUE(plan.stageable);
    uint64_t stream_rounds = 0;
    ASSERT_TRUE(VectorStreamRounds(shape, layout, n, NodeCounts{too_large.data(), shape.size()}, &stream_rounds));
    EXPECT_EQ(plan.stream_rounds, stream_rounds);
    EXPECT_GT(plan.stream_rounds, 1u);
    EXPECT_EQ(plan.digest, VectorCountDigest(shape, n, NodeCounts{too_large.data(), shape.size()}));
    std::vector<Put> round0;
    PlanVectorStreamPuts(shape, n, layout, NodeCounts{too_large.data(), shape.size()}, 0, &round0);
    ASSERT_EQ(plan.puts.size(), shape.nodes() - 1u);
    ExpectSamePuts(plan.puts, round0);
    for (const Delivery& d : plan.deliveries) EXPECT_EQ(d.bytes, 0u);
    EXPECT_FALSE(UpdateVectorRoundPlan(shape, n, layout, too_large.data(), &plan));
    EXPECT_FALSE(plan.fits);
    // More rounds than are served: neither fits nor stageable, nothing planned.
    too_large[0].bytes = ~uint64_t{0};
    EXPECT_TRUE(UpdateVectorRoundPlan(shape, n, layout, too_large.data(), &plan));
    EXPECT_FALSE(plan.fits);
    EXPECT_FALSE(plan.stageable);
    EXPECT_TRUE(plan.puts.empty());
    EXPECT_TRUE(UpdateVectorRoundPlan(shape, n, layout, tables[n].data(), &plan));
    ASSERT_TRUE(plan.fits);
    ExpectPlannedFrom(shape, n, layout, tables[n], plan);
  }
}

}  // namespace
}  // namespace ohio
