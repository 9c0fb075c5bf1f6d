#include "daemon/engine/pair_batches.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace ohio {
namespace {

// A call among `ranks` ranks whose pair (src, dst) sends counts[src][dst] bytes, each rank's
// pieces packed in rank order in its buffers (receive tables the transpose of the send tables,
// as MPI's matching rule makes them); moved slice by slice as ohiod moves it, through a staging
// area of `capacity`: every piece of a slice read before any is written.
struct Call {
  uint32_t ranks;
  std::vector<std::vector<uint64_t>> counts;
  std::vector<std::vector<uint64_t>> send_at, recv_at;
  std::vector<std::vector<uint8_t>> send, recv;

  Call(uint32_t n, const std::vector<std::vector<uint64_t>>& c, bool in_place, uint32_t seed)
      : ranks(n), counts(c), send_at(n, std::vector<uint64_t>(n)), recv_at(n, std::vector<uint64_t>(n)) {
    std::mt19937 random(seed);
    for (uint32_t r = 0; r < n; ++r) {
      uint64_t s = 0, t = 0;
      for (uint32_t p = 0; p < n; ++p) {
        send_at[r][p] = s;
        s += counts[r][p];
        recv_at[r][p] = t;
        t += counts[p][r];
      }
      std::vector<uint8_t> bytes(s);
      for (auto& b : bytes) b = static_cast<uint8_t>(random());
      send.push_back(bytes);
      recv.push_back(in_place ? bytes : std::vector<uint8_t>(t, 0xEE));
    }
    // In place, a rank's one buffer is both: send_at == recv_at, which needs symmetric counts.
    if (in_place) send_at = recv_at;
  }

  // What every rank must hold at the end.
  std::vector<std::vector<uint8_t>> Expected() const {
    std::vector<std::vector<uint8_t>> out = recv;
    for (uint32_t src = 0; src < ranks; ++src) {
      for (uint32_t dst = 0; dst < ranks; ++dst) {
        for (uint64_t i = 0; i < counts[src][dst]; ++i) out[dst][recv_at[dst][src] + i] = send[src][send_at[src][dst] + i];
      }
    }
    return out;
  }

  // Moves the call; `in_place` moves between one buffer per rank. Returns the most one slice held.
  uint64_t Move(uint64_t capacity, bool in_place, uint64_t* slices) {
    std::vector<std::vector<uint8_t>>& from = in_place ? recv : send;
    PairBatches batches(ranks, [this](uint32_t s, uint32_t d) { return counts[s][d]; }, capacity);
    std::vector<PairChunk> chunks;
    uint64_t most = 0;
    *slices = 0;
    while (batches.Next(&chunks)) {
      ++*slices;
      struct Piece {
        uint32_t src, dst;
        uint64_t offset, length;
      };
      std::vector<Piece> pieces;
      for (const PairChunk& c : chunks) {
        pieces.push_back({c.a, c.b, c.offset, batches.Forward(c)});
        if (c.a != c.b) pieces.push_back({c.b, c.a, c.offset, batches.Backward(c)});
        else EXPECT_EQ(batches.Backward(c), 0u);
      }
      std::vector<uint8_t> staging;
      for (const Piece& p : pieces) {
        for (uint64_t i = 0; i < p.length; ++i) staging.push_back(from[p.src][send_at[p.src][p.dst] + p.offset + i]);
      }
      EXPECT_LE(staging.size(), capacity);
      most = std::max<uint64_t>(most, staging.size());
      uint64_t at = 0;
      for (const Piece& p : pieces) {
        for (uint64_t i = 0; i < p.length; ++i) recv[p.dst][recv_at[p.dst][p.src] + p.offset + i] = staging[at++];
      }
    }
    return most;
  }
};

std::vector<std::vector<uint64_t>> Uniform(uint32_t n, uint64_t m) {
  return std::vector<std::vector<uint64_t>>(n, std::vector<uint64_t>(n, m));
}

TEST(PairBatches, AnAlltoallFittingTheAreaIsOneSlice) {
  Call call(4, Uniform(4, 100), false, 1);
  const auto expected = call.Expected();
  uint64_t slices = 0;
  EXPECT_EQ(call.Move(1 << 20, false, &slices), 1600u);
  EXPECT_EQ(slices, 1u);
  EXPECT_EQ(call.recv, expected);
}

TEST(PairBatches, ALargeCallGoesInSlicesNoneOverTheArea) {
  Call call(3, Uniform(3, 1000), false, 2);
  const auto expected = call.Expected();
  uint64_t slices = 0;
  EXPECT_LE(call.Move(700, false, &slices), 700u);
  // 9,000 bytes through 700: at least 13 slices; chunks of pairs do not leave slivers behind.
  EXPECT_GE(slices, 13u);
  EXPECT_LE(slices, 26u);
  EXPECT_EQ(call.recv, expected);
}

TEST(PairBatches, InPlaceIsRightWhateverTheArea) {
  for (uint64_t capacity : {2u, 3u, 64u, 999u, 1000u, 4096u, 1u << 20}) {
    for (uint32_t n : {1u, 2u, 3u, 5u}) {
      Call call(n, Uniform(n, 333), true, n);
      const auto expected = call.Expected();
      uint64_t slices = 0;
      call.Move(capacity, true, &slices);
      EXPECT_EQ(call.recv, expected) << n << " ranks, " << capacity << " bytes of staging";
    }
  }
}

TEST(PairBatches, VectorCountsZerosAndUnevenDirections) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    const uint32_t n = 1 + random() % 6;
    std::vector<std::vector<uint64_t>> counts(n, std::vector<uint64_t>(n));
    for (auto& row : counts) {
      for (auto& c : row) c = random() % 3 == 0 ? 0 : random() % 500;
    }
    const uint64_t capacity = 2 + random() % 2000;
    Call call(n, counts, false, trial);
    const auto expected = call.Expected();
    uint64_t slices = 0;
    EXPECT_LE(call.Move(capacity, false, &slices), capacity);
    ASSERT_EQ(call.recv, expected) << "trial " << trial << ": " << n << " ranks, capacity " << capacity;
  }
}

TEST(PairBatches, InPlaceVectorWithSymmetricCounts) {
  std::mt19937 random(11);
  for (int trial = 0; trial < 200; ++trial) {
    const uint32_t n = 1 + random() % 6;
    std::vector<std::vector<uint64_t>> counts(n, std::vector<uint64_t>(n));
    for (uint32_t a = 0; a < n; ++a) {
      for (uint32_t b = a; b < n; ++b) counts[a][b] = counts[b][a] = random() % 4 == 0 ? 0 : random() % 400;
    }
    const uint64_t capacity = 2 + random() % 1500;
    Call call(n, counts, true, trial);
    const auto expected = call.Expected();
    uint64_t slices = 0;
    call.Move(capacity, true, &slices);
    ASSERT_EQ(call.recv, expected) << "trial " << trial << ": " << n << " ranks, capacity " << capacity;
  }
}

TEST(PairBatches, FinishedIsKnownRightAfterTheLastSlice) {
  PairBatches batches(3, [](uint32_t s, uint32_t d) { return s == 2 || d == 2 ? 0 : 100; }, 1 << 20);
  std::vector<PairChunk> chunks;
  EXPECT_FALSE(batches.Finished());
  ASSERT_TRUE(batches.Next(&chunks));
  EXPECT_TRUE(batches.Finished()) << "the pairs left have nothing to move";
  EXPECT_FALSE(batches.Next(&chunks));
  PairBatches large(2, [](uint32_t, uint32_t) { return 1000; }, 1500);
  uint64_t slices = 0;
  while (!large.Finished()) {
    ASSERT_TRUE(large.Next(&chunks));
    ++slices;
  }
  EXPECT_FALSE(large.Next(&chunks));
  EXPECT_GE(slices, 3u);
}

TEST(PairBatches, NothingToMoveIsNoSlice) {
  Call call(4, Uniform(4, 0), false, 3);
  uint64_t slices = 0;
  EXPECT_EQ(call.Move(4096, false, &slices), 0u);
  EXPECT_EQ(slices, 0u);
}

}  // namespace
}  // namespace ohio
