// The staged alltoallv of a group on one node (shm/plan/local_vector_plan.h), simulated for 1 to 6
// ranks and several seeds: every rank writes its table from its counts (the row's sum, largest count and
// digest share checked against that table) and stages its row in its region of one SSB half (in piece
// slots when every count fits one, else packed), every rank copies its column out by the
// senders' tables alone (and from piece slots without them), and every received byte and every
// gap is checked; the ranks' digest shares sum to zero exactly when every pair agrees, and the first pair
// that disagrees is the same whichever rank looks; a row stages only when it fits its region and
// its mean block is below the single-copy switch.
#include "shm/plan/local_vector_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/mix64.h"
#include "shm/plan/vector_plan.h"

namespace ohio {
namespace {

constexpr uint8_t kGap = 0xEE;
constexpr uint64_t kRegion = 1024;

GroupShape OneNode(uint32_t ranks) {
  Result<GroupShape> r = GroupShape::Make(1, std::vector<uint32_t>(ranks, 0));
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.value();
}

// Bytes rank a sends rank b, up to `most`: a quarter of the pairs none.
uint64_t Count(uint32_t a, uint32_t b, uint64_t seed, uint64_t most) {
  const uint64_t h = Mix64(seed ^ (uint64_t{a} << 20 | b));
  return h % 4 == 0 ? 0 : (h >> 8) % (most + 1);
}

uint8_t Pattern(uint32_t a, uint32_t b, uint64_t i) { return static_cast<uint8_t>(a * 131 + b * 31 + i * 7 + 1); }

// What rank a passes its alltoallv: its blocks in its send buffer in reverse rank order, two bytes
// apart (displacements out of order, gaps between), and what it expects of each rank.
struct RankCall {
  std::vector<size_t> send_counts, send_displs, recv_counts;
};

RankCall CallOf(uint32_t a, uint32_t ranks, uint64_t seed, uint64_t most) {
  RankCall c{std::vector<size_t>(ranks), std::vector<size_t>(ranks), std::vector<size_t>(ranks)};
  uint64_t at = 2;
  for (uint32_t b = ranks; b-- > 0;) {
    c.send_counts[b] = Count(a, b, seed, most);
    c.send_displs[b] = at;
    c.recv_counts[b] = Count(b, a, seed, most);
    at += c.send_counts[b] + 2;
  }
  return c;
}

// Every rank's table as it writes it.
std::vector<CountEntry> Tables(uint32_t ranks, uint64_t seed, uint64_t most) {
  std::vector<CountEntry> tables(uint64_t{ranks} * ranks);
  for (uint32_t a = 0; a < ranks; ++a) {
    const RankCall c = CallOf(a, ranks, seed, most);
    for (uint32_t b = 0; b < ranks; ++b) tables[a * ranks + b] = CountEntry{c.send_counts[b], c.send_displs[b], c.recv_counts[b]};
  }
  return tables;
}

// A row of `counts` sent by rank 0 of `shape`, nothing expected.
VectorRow RowOf(const GroupShape& shape, std::vector<size_t> counts) {
  std::vector<size_t> none(counts.size(), 0);
  std::vector<CountEntry> table(counts.size());
  return WriteVectorRow(shape, VectorPairKeysOf(shape, 0).data(), counts.data(), none.data(), none.data(),
                        table.data());
}

TEST(LocalVectorPlan, RowsStagedByEveryRankAreCopiedOutByTheTablesAloneOrByPieceSlots) {
  uint32_t slotted = 0, packed = 0;
  for (uint32_t ranks = 1; ranks <= 6; ++ranks) {
    // Counts up to the region's share per rank: every row fits, and where that share is not a
    // cache-line multiple some counts are larger than a piece slot.
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      const GroupShape shape = OneNode(ranks);
      const uint64_t slot = VectorPieceSlotBytes(shape, kRegion);
      std::vector<CountEntry> tables(uint64_t{ranks} * ranks);
      std::vector<uint8_t> half(uint64_t{ranks} * kRegion, kGap);
      uint64_t digest = 0;
      for (uint32_t a = 0; a < ranks; ++a) {
        const RankCall c = CallOf(a, ranks, seed, kRegion / ranks);
        CountEntry* t = &tables[a * ranks];
        const VectorRow row =
            WriteVectorRow(shape, VectorPairKeysOf(shape, a).data(), c.send_counts.data(), c.send_displs.data(),
                           c.recv_counts.data(), t);
        uint64_t sum = 0, largest = 0;
        for (uint32_t b = 0; b < ranks; ++b) {
          ASSERT_EQ(t[b].bytes, c.send_counts[b]);
          ASSERT_EQ(t[b].displacement, c.send_displs[b]);
          ASSERT_EQ(t[b].recv_bytes, c.recv_counts[b]);
          sum += c.send_counts[b];
          largest = std::max<uint64_t>(largest, c.send_counts[b]);
        }
        EXPECT_EQ(row.bytes, sum);
        EXPECT_EQ(row.largest, largest);
        EXPECT_EQ(row.digest, VectorRankDigest(shape, a, t)) << "the daemon's digest of the same table";
        std::vector<uint8_t> send(4096, kGap);
        for (uint32_t b = 0; b < ranks; ++b) {
          for (uint64_t i = 0; i < t[b].bytes; ++i) send[t[b].displacement + i] = Pattern(a, b, i);
        }
        ASSERT_TRUE(StagesVectorRow(shape, row, kRegion, ~uint64_t{0}));
        digest += row.digest;
        const bool fits_slots = largest <= slot;
        const StagedRow how = StagedRowOf(row, slot);
        ASSERT_EQ(how, fits_slots ? StagedRow::kPieceSlots : StagedRow::kPacked);
        ++(fits_slots ? slotted : packed);
        uint64_t at = 0;
        StageVectorRow(shape, slot, how, t, [&](uint64_t src, uint64_t dst, uint64_t len) {
          EXPECT_NE(len, 0u) << "a zero count costs no copy";
          if (fits_slots) {
            EXPECT_EQ(dst % slot, 0u) << "each piece at the start of a slot";
          } else {
            EXPECT_EQ(dst, at) << "packed with no room between pieces";
          }
          ASSERT_LE(dst + len, kRegion);
          at = dst + len;
          std::memcpy(&half[a * kRegion + dst], &send[src], len);
        });
        for (uint32_t b = 0; b < ranks && fits_slots; ++b) EXPECT_EQ(t[b].displacement, b * slot);
        ASSERT_LE(at, kRegion);
        for (uint64_t i = at; i < kRegion; ++i) ASSERT_EQ(half[a * kRegion + i], kGap) << "past the row";
      }
      EXPECT_EQ(digest, 0u) << "every pair agrees";
      EXPECT_FALSE(FirstVectorDisagreement(shape, tables.data()).found);
      for (uint32_t b = 0; b < ranks; ++b) {
        for (uint32_t a = 0; a < ranks; ++a) {
          const CountEntry& e = tables[a * ranks + b];
          ASSERT_EQ(e.bytes, tables[b * ranks + a].recv_bytes);
          for (uint64_t i = 0; i < e.bytes; ++i) {
            ASSERT_EQ(half[a * kRegion + e.displacement + i], Pattern(a, b, i))
                << ranks << " ranks, seed " << seed << ": byte " << i << " from " << a << " to " << b;
          }
        }
      }
    }
  }
  EXPECT_GT(slotted, 0u);
  EXPECT_GT(packed, 0u);
}

TEST(LocalVectorPlan, APairThatDisagreesIsFoundFirstByReaderThenSourceAndTheDigestSaysSo) {
  const uint32_t ranks = 5;
  const GroupShape shape = OneNode(ranks);
  std::vector<CountEntry> tables = Tables(ranks, 3, 100);
  tables[4 * ranks + 1].recv_bytes += 1;  // rank 4 expects a byte more of rank 1
  tables[2 * ranks + 3].bytes += 7;       // rank 2 sends rank 3 seven bytes more than it expects
  uint64_t digest = 0;
  for (uint32_t a = 0; a < ranks; ++a) digest += VectorRankDigest(shape, a, &tables[a * ranks]);
  EXPECT_NE(digest, 0u);
  const VectorDisagreement d = FirstVectorDisagreement(shape, tables.data());
  ASSERT_TRUE(d.found);
  EXPECT_EQ(d.reader, 3u);
  EXPECT_EQ(d.source, 2u);
  EXPECT_EQ(d.sent, Count(2, 3, 3, 100) + 7);
  EXPECT_EQ(d.expected, Count(2, 3, 3, 100));
  tables[2 * ranks + 3].bytes -= 7;
  const VectorDisagreement e = FirstVectorDisagreement(shape, tables.data());
  ASSERT_TRUE(e.found);
  EXPECT_EQ(e.reader, 4u);
  EXPECT_EQ(e.source, 1u);
  EXPECT_EQ(e.expected, Count(1, 4, 3, 100) + 1);
}

TEST(LocalVectorPlan, ARowStagesWhenItFitsItsRegionAndItsMeanBlockIsBelowTheSingleCopySwitch) {
  const GroupShape shape = OneNode(4);
  const VectorRow even = RowOf(shape, {256, 256, 256, 256});
  EXPECT_TRUE(StagesVectorRow(shape, even, 1024, 257));
  EXPECT_FALSE(StagesVectorRow(shape, even, 1023, 257)) << "one byte too large for its region";
  EXPECT_FALSE(StagesVectorRow(shape, even, 1024, 256)) << "mean block at the switch: read in place";
  EXPECT_TRUE(StagesVectorRow(shape, RowOf(shape, {1000, 0, 0, 0}), 1024, 251)) << "by the mean, not the largest block";
  EXPECT_FALSE(StagesVectorRow(shape, RowOf(shape, {~size_t{0}, 2, 0, 0}), 1024, ~uint64_t{0})) << "a sum that wraps around";
  EXPECT_TRUE(StagesVectorRow(shape, RowOf(shape, {0, 0, 0, 0}), 0, 1)) << "nothing to send stages in no room";
}

}  // namespace
}  // namespace ohio
