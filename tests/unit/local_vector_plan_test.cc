// The staged alltoallv of a group on one node (shm/local_vector_plan.h), simulated for 1 to 6
// ranks and several seeds: every rank stages its row in its region of one SSB half (in piece
// slots when every count fits one, else packed), every rank copies its column out by the
// senders' tables alone (and from piece slots without them), and every received byte and every
// gap is checked; the ranks' digest shares sum to zero exactly when every pair agrees, and the first pair
// that disagrees is the same whichever rank looks; a row stages only when it fits its region and
// its mean block is below the single-copy switch.
#include "shm/local_vector_plan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/mix64.h"
#include "shm/vector_plan.h"

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

// Every rank's table as it writes it: blocks in its send buffer in reverse rank order, two bytes
// apart.
std::vector<CountEntry> Tables(uint32_t ranks, uint64_t seed, uint64_t most) {
  std::vector<CountEntry> tables(uint64_t{ranks} * ranks);
  for (uint32_t a = 0; a < ranks; ++a) {
    uint64_t at = 2;
    for (uint32_t b = ranks; b-- > 0;) {
      tables[a * ranks + b] = CountEntry{Count(a, b, seed, most), at, Count(b, a, seed, most)};
      at += Count(a, b, seed, most) + 2;
    }
  }
  return tables;
}

TEST(LocalVectorPlan, RowsStagedByEveryRankAreCopiedOutByTheTablesAloneOrByPieceSlots) {
  uint32_t slotted = 0, packed = 0;
  for (uint32_t ranks = 1; ranks <= 6; ++ranks) {
    // Counts up to the region's share per rank: every row fits, and where that share is not a
    // cache-line multiple some counts are larger than a piece slot.
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      const GroupShape shape = OneNode(ranks);
      const uint64_t slot = VectorPieceSlotBytes(shape, kRegion);
      std::vector<CountEntry> tables = Tables(ranks, seed, kRegion / ranks);
      std::vector<uint8_t> half(uint64_t{ranks} * kRegion, kGap);
      std::vector<CopySpan> spans;
      uint64_t digest = 0;
      for (uint32_t a = 0; a < ranks; ++a) {
        CountEntry* t = &tables[a * ranks];
        std::vector<uint8_t> send(4096, kGap);
        for (uint32_t b = 0; b < ranks; ++b) {
          for (uint64_t i = 0; i < t[b].bytes; ++i) send[t[b].displacement + i] = Pattern(a, b, i);
        }
        ASSERT_TRUE(StagesVectorRow(shape, t, kRegion, ~uint64_t{0}));
        digest += VectorRankDigest(shape, a, t);
        bool fits_slots = true;
        for (uint32_t b = 0; b < ranks; ++b) fits_slots = fits_slots && t[b].bytes <= slot;
        const StagedRow row = PlanStagedRowCopyIn(shape, kRegion, t, &spans);
        ASSERT_EQ(row, fits_slots ? StagedRow::kPieceSlots : StagedRow::kPacked);
        ++(fits_slots ? slotted : packed);
        uint64_t at = 0;
        for (const CopySpan& s : spans) {
          EXPECT_NE(s.len, 0u) << "a zero count costs no copy";
          if (fits_slots) {
            EXPECT_EQ(s.dst % slot, 0u) << "each piece at the start of a slot";
          } else {
            EXPECT_EQ(s.dst, at) << "packed with no room between pieces";
          }
          at = s.dst + s.len;
          std::memcpy(&half[a * kRegion + s.dst], &send[s.src], s.len);
        }
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
  std::vector<CountEntry> row(4, CountEntry{256, 0, 0});
  EXPECT_TRUE(StagesVectorRow(shape, row.data(), 1024, 257));
  EXPECT_FALSE(StagesVectorRow(shape, row.data(), 1023, 257)) << "one byte too large for its region";
  EXPECT_FALSE(StagesVectorRow(shape, row.data(), 1024, 256)) << "mean block at the switch: read in place";
  row = {CountEntry{1000, 0, 0}, CountEntry{0, 0, 0}, CountEntry{0, 0, 0}, CountEntry{0, 0, 0}};
  EXPECT_TRUE(StagesVectorRow(shape, row.data(), 1024, 251)) << "by the mean, not the largest block";
  row = {CountEntry{~uint64_t{0}, 0, 0}, CountEntry{2, 0, 0}, CountEntry{0, 0, 0}, CountEntry{0, 0, 0}};
  EXPECT_FALSE(StagesVectorRow(shape, row.data(), 1024, ~uint64_t{0})) << "a sum that wraps around";
  row.assign(4, CountEntry{0, 0, 0});
  EXPECT_TRUE(StagesVectorRow(shape, row.data(), 0, 1)) << "nothing to send stages in no room";
}

}  // namespace
}  // namespace ohio
