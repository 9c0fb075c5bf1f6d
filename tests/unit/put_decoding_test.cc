// The decoding of a landed put's immediate and a completed put's cookie: which group, which
// delivery, and how many bytes the ranks' data counters take from each kind of put.
#include "daemon/exchange/put_decoding.h"

#include <gtest/gtest.h>

#include "daemon/exchange/wire.h"

namespace ohio {
namespace {

TEST(PutDecodingTest, LandedAnnouncedPutIsAllPayload) {
  const DecodedPut p = DecodeLandedPut(EncodeImm(37, 5));
  EXPECT_EQ(p.tag, 37u);
  EXPECT_EQ(p.delivery, 5u);
  EXPECT_FALSE(p.eager_header);
  EXPECT_FALSE(p.vector_cube);
  EXPECT_FALSE(p.tables);
  EXPECT_EQ(PayloadBytes(p, 4096, 4), 4096u);
}

TEST(PutDecodingTest, LandedEagerPutLosesItsHeader) {
  const DecodedPut p = DecodeLandedPut(EncodeImm(kMaxGroupTags - 1, EagerImmDelivery(1)));
  EXPECT_EQ(p.tag, kMaxGroupTags - 1);
  EXPECT_EQ(p.delivery, EagerImmDelivery(1));
  EXPECT_TRUE(p.eager_header);
  EXPECT_EQ(PayloadBytes(p, 64 + 1000, 4), 1000u);
  // A put shorter than its header (a skipped round's) carries nothing of the ranks'.
  EXPECT_EQ(PayloadBytes(p, 64, 4), 0u);
  EXPECT_EQ(PayloadBytes(p, 10, 4), 0u);
}

TEST(PutDecodingTest, HypercubeMessageLosesItsHeaderOnly) {
  const DecodedPut p = DecodeLandedPut(EncodeImm(2, BruckImmDelivery(0)));
  EXPECT_TRUE(p.eager_header);
  EXPECT_FALSE(p.vector_cube);
  EXPECT_EQ(PayloadBytes(p, 64 + 512, 8), 512u);
}

TEST(PutDecodingTest, VectorCubeMessageLosesItsSizeTableToo) {
  const DecodedPut p = DecodeLandedPut(EncodeImm(9, VectorCubeImmDelivery(1)));
  EXPECT_EQ(p.tag, 9u);
  EXPECT_TRUE(p.vector_cube);
  // 32 nodes: a 64-byte header and 16 sizes of 4 bytes, a cache line: 128 bytes before the blocks.
  EXPECT_EQ(PayloadBytes(p, 128 + 300, 32), 300u);
  // 64 nodes: 32 sizes, two cache lines.
  EXPECT_EQ(PayloadBytes(p, 192 + 300, 64), 300u);
  // A void call's message is its header line alone.
  EXPECT_EQ(PayloadBytes(p, 64, 32), 0u);
  // For a group not open here only the eager header is known.
  EXPECT_EQ(PayloadBytes(p, 128 + 300, 0), 64u + 300u);
}

TEST(PutDecodingTest, CountTablesAreNoPayload) {
  const DecodedPut p = DecodeLandedPut(EncodeImm(3, VectorTablesImmDelivery(0)));
  EXPECT_TRUE(p.tables);
  EXPECT_EQ(PayloadBytes(p, 64 + 4096, 4), 0u);
}

TEST(PutDecodingTest, CompletedPutsCarryTagParityAndKind) {
  const DecodedPut announced = DecodeCompletedPut(put_cookie::Make(700, 3, false, 12));
  EXPECT_EQ(announced.tag, 700u);
  EXPECT_EQ(announced.parity, 1u);
  EXPECT_EQ(announced.delivery, 0u);
  EXPECT_FALSE(announced.eager_header);
  EXPECT_EQ(PayloadBytes(announced, 8192, 4), 8192u);

  // The round's low bits wrap at 256; the parity survives.
  const DecodedPut eager = DecodeCompletedPut(put_cookie::Make(1, 256 + 2, true, 0));
  EXPECT_EQ(eager.tag, 1u);
  EXPECT_EQ(eager.parity, 0u);
  EXPECT_TRUE(eager.eager_header);
  EXPECT_EQ(PayloadBytes(eager, 64 + 8, 4), 8u);

  const DecodedPut tables = DecodeCompletedPut(put_cookie::Make(5, 7, true, 1, true));
  EXPECT_TRUE(tables.tables);
  EXPECT_EQ(PayloadBytes(tables, 64 + 100, 4), 0u);

  const DecodedPut cube = DecodeCompletedPut(put_cookie::Make(kMaxGroupTags - 1, 1, true, 4, false, true));
  EXPECT_EQ(cube.tag, kMaxGroupTags - 1);
  EXPECT_TRUE(cube.vector_cube);
  EXPECT_EQ(PayloadBytes(cube, 128 + 40, 32), 40u);
}

}  // namespace
}  // namespace ohio
