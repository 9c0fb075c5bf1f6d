#include "shm/plan/staging.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/status.h"
#include "shm/plan/group_shape.h"
#include "tests/unit/plan/rank_maps.h"

namespace ohio {
namespace {

using ::testing::HasSubstr;
using testing_util::AllValidMaps;
using testing_util::MapName;

const std::vector<uint64_t> kSizes = {0, 1, 2, 7, 63, 64, 65, 127, 128, 1000, 4096, (1u << 20) + 3};

GroupShape Shape(uint32_t nodes, std::vector<uint32_t> map) {
  Result<GroupShape> r = GroupShape::Make(nodes, std::move(map));
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.value();
}

TEST(MinSsbBytes, IsMaxPpnTimesSize) {
  EXPECT_EQ(MinSsbBytes(Shape(1, {0})), 1u);
  EXPECT_EQ(MinSsbBytes(Shape(2, {0, 1, 1, 0, 1})), 3u * 5);
  EXPECT_EQ(MinSsbBytes(Shape(3, {2, 0, 1, 2, 2, 2})), 4u * 6);
}

TEST(PlanStaging, TooSmallSsbIsNoMemory) {
  // Max PPN 3 x 5 ranks = 15 messages: 14 bytes cannot hold a byte of each.
  GroupShape s = Shape(2, {0, 1, 0, 1, 0});
  for (uint64_t m : {0ull, 1ull, 4096ull}) {
    Result<Staging> r = PlanStaging(s, 14, m);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kNoMemory);
    EXPECT_THAT(r.status().message(), HasSubstr("14 bytes"));
    EXPECT_THAT(r.status().message(), HasSubstr("15 messages"));
    EXPECT_THAT(r.status().message(), HasSubstr("3 x 5"));
  }
  Result<Staging> zero = PlanStaging(s, 0, 1);
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().code(), Code::kNoMemory);
  EXPECT_TRUE(PlanStaging(s, 15, 4096).ok());
}

TEST(PlanStaging, EveryShapeBelowMinimumIsNoMemory) {
  for (const auto& rm : AllValidMaps(6, 3)) {
    GroupShape s = Shape(rm.nodes, rm.rank_node);
    const uint64_t min = uint64_t{s.max_ppn()} * s.size();
    for (uint64_t ssb = 0; ssb < min; ++ssb) {
      Result<Staging> r = PlanStaging(s, ssb, 64);
      ASSERT_FALSE(r.ok()) << MapName(rm.rank_node) << " ssb " << ssb;
      EXPECT_EQ(r.status().code(), Code::kNoMemory);
      EXPECT_THAT(r.status().message(), HasSubstr(std::to_string(ssb) + " bytes"));
      EXPECT_THAT(r.status().message(), HasSubstr(std::to_string(min) + " messages"));
    }
    ASSERT_TRUE(PlanStaging(s, min, 64).ok()) << MapName(rm.rank_node);
  }
}

void CheckStaging(const GroupShape& s, uint64_t ssb, uint64_t m) {
  SCOPED_TRACE("ssb " + std::to_string(ssb) + " M " + std::to_string(m));
  const uint64_t messages = uint64_t{s.max_ppn()} * s.size();
  Result<Staging> r = PlanStaging(s, ssb, m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Staging& st = r.value();
  EXPECT_EQ(st.bytes_per_rank, m);
  ASSERT_GE(st.rounds, 1u);
  EXPECT_LE(st.slice * messages, ssb);

  // Every round when there are few; otherwise the first and last 64 (length() is closed
  // form, so the middle rounds cannot differ from their neighbours), and the sum from them.
  auto check_round = [&](uint64_t k) {
    EXPECT_EQ(st.offset(k), k * st.slice) << "round " << k;
    const uint64_t len = st.length(k);
    EXPECT_LE(len, st.slice) << "round " << k;
    if (m > 0) {
      EXPECT_GT(len, 0u) << "round " << k << " is empty";
    }
    if (k + 1 < st.rounds) {
      EXPECT_EQ(len, st.slice) << "only the last round may be short";
    }
    return len;
  };
  if (st.rounds <= 4096) {
    uint64_t total = 0;
    for (uint64_t k = 0; k < st.rounds; ++k) total += check_round(k);
    EXPECT_EQ(total, m);
  } else {
    for (uint64_t k = 0; k < 64; ++k) check_round(k);
    for (uint64_t k = st.rounds - 64; k < st.rounds; ++k) check_round(k);
    EXPECT_EQ((st.rounds - 1) * st.slice + st.length(st.rounds - 1), m);
  }

  const uint64_t fits = ssb / messages;
  if (m <= fits) {
    EXPECT_EQ(st.slice, m);
    EXPECT_EQ(st.rounds, 1u);
  } else {
    EXPECT_LT(st.slice, m);
    EXPECT_GE(st.rounds, 2u);
    EXPECT_GE(st.slice, 1u);
    if (fits >= 64) {
      EXPECT_EQ(st.slice % 64, 0u) << "slice " << st.slice;
      // Rounded down, not further: the largest multiple of 64 that fits.
      EXPECT_GT(st.slice + 64, fits) << "slice " << st.slice;
    } else {
      EXPECT_EQ(st.slice, fits);
    }
  }
  if (st.slice < m && st.slice >= 64) {
    EXPECT_EQ(st.slice % 64, 0u);
  }
}

TEST(PlanStaging, ExhaustiveSmallShapes) {
  int cases = 0;
  for (const auto& rm : AllValidMaps(6, 3)) {
    SCOPED_TRACE(MapName(rm.rank_node) + " over " + std::to_string(rm.nodes));
    GroupShape s = Shape(rm.nodes, rm.rank_node);
    const uint64_t min = uint64_t{s.max_ppn()} * s.size();
    std::vector<uint64_t> ssbs = {min, min + 1, 2 * min - 1, 3 * min, 63 * min, 64 * min,
                                  64 * min + 5, 65 * min, 127 * min, 128 * min + 1,
                                  4096 * min, 1000003, 64ull << 20};
    for (uint64_t ssb : ssbs) {
      if (ssb < min) continue;
      for (uint64_t m : kSizes) {
        CheckStaging(s, ssb, m);
        ++cases;
      }
    }
    // Exactly enough for one round, and one byte short of it.
    for (uint64_t m : kSizes) {
      if (m == 0) continue;
      CheckStaging(s, m * min, m);
      CheckStaging(s, m * min - 1 < min ? min : m * min - 1, m);
    }
  }
  EXPECT_GT(cases, 100000);
}

TEST(PlanStaging, EverySsbSizeForOneShape) {
  GroupShape s = Shape(3, {0, 1, 2, 0, 1, 0, 2});  // max PPN 3, 7 ranks: 21 messages
  for (uint64_t ssb = 21; ssb <= 21 * 300; ++ssb) {
    for (uint64_t m : {0ull, 1ull, 7ull, 63ull, 64ull, 65ull, 200ull, 4096ull}) {
      CheckStaging(s, ssb, m);
    }
  }
}

TEST(PlanStaging, ZeroBytesIsOneEmptyRound) {
  GroupShape s = Shape(2, {0, 1});
  Result<Staging> r = PlanStaging(s, 2, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().rounds, 1u);
  EXPECT_EQ(r.value().length(0), 0u);
}

TEST(PlanStaging, ConcreteSplit) {
  // 2 nodes x 2 PPN: 8 messages. 8 * 100 bytes of SSB: 100 bytes each, rounded down to 64.
  GroupShape s = Shape(2, {0, 0, 1, 1});
  Result<Staging> r = PlanStaging(s, 800, 1000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().slice, 64u);
  EXPECT_EQ(r.value().rounds, 16u);  // 15 x 64 + 40
  EXPECT_EQ(r.value().length(15), 40u);
}

}  // namespace
}  // namespace ohio

namespace ohio {
namespace {

// M near 2^64 must still give at least one round (a rounds-up division would wrap to zero).
TEST(PlanStagingOverflow, HugeMessagesStillHaveRounds) {
  auto shape = GroupShape::Make(1, {0, 0});
  ASSERT_TRUE(shape.ok());
  for (uint64_t m : {UINT64_MAX, UINT64_MAX - 62, UINT64_MAX - 63, (UINT64_MAX / 64) * 64}) {
    auto s = PlanStaging(shape.value(), 256, m);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->slice, 64u);
    EXPECT_EQ(s->rounds, m / 64 + (m % 64 != 0 ? 1 : 0)) << m;
    EXPECT_GE(s->rounds, 1u);
  }
}

}  // namespace
}  // namespace ohio
