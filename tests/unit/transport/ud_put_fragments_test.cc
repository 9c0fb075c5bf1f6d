// A put over UD cut into datagrams and put back together (daemon/transport/verbs/
// ud_put_fragments.h): the pieces cover the put exactly, an empty put is one empty piece, the
// put completes with its immediate once its last byte lands whatever the order of its pieces,
// puts of one peer interleave, and a piece that contradicts its put is a protocol error.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "daemon/transport/verbs/ud/ud_put_fragments.h"

namespace ohio {
namespace {

TEST(CutUdPut, PiecesCoverThePutExactly) {
  EXPECT_EQ(CutUdPut(10000, 4040), (std::vector<UdFragment>{{0, 4040}, {4040, 4040}, {8080, 1920}}));
  EXPECT_EQ(CutUdPut(8080, 4040), (std::vector<UdFragment>{{0, 4040}, {4040, 4040}}));
  EXPECT_EQ(CutUdPut(1, 4040), (std::vector<UdFragment>{{0, 1}}));
  EXPECT_EQ(CutUdPut(0, 4040), (std::vector<UdFragment>{{0, 0}}));
  EXPECT_TRUE(CutUdPut(100, 0).empty());
  const auto big = CutUdPut(0xFFFFFFFFu, 4040);
  EXPECT_EQ(big.size(), 0xFFFFFFFFull / 4040 + 1);
  EXPECT_EQ(big.back().at + uint64_t{big.back().bytes}, 0xFFFFFFFFull);
}

TEST(UdPutAssembly, APutCompletesWithItsImmediateWhenItsLastByteLandsInAnyOrder) {
  UdPutAssembly a;
  auto pieces = CutUdPut(10000, 4040);
  std::reverse(pieces.begin(), pieces.end());
  for (size_t i = 0; i < pieces.size(); ++i) {
    auto r = a.Landed(5, 1 << 20, 10000, 0xABCD, pieces[i].at, pieces[i].bytes);
    ASSERT_TRUE(r.ok()) << r.status().message();
    if (i + 1 < pieces.size()) {
      EXPECT_EQ(r.value(), std::nullopt);
      EXPECT_EQ(a.incomplete(), 1u);
    } else {
      EXPECT_EQ(r.value(), std::optional<uint32_t>(0xABCD));
    }
  }
  EXPECT_EQ(a.incomplete(), 0u);
  // An empty put completes at once.
  auto empty = a.Landed(6, 0, 0, 7, 0, 0);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty.value(), std::optional<uint32_t>(7));
}

TEST(UdPutAssembly, APieceThatContradictsItsPutIsAProtocolError) {
  UdPutAssembly a;
  ASSERT_TRUE(a.Landed(1, 100, 8000, 9, 0, 4000).ok());
  for (const auto& [start, total, imm] : {std::tuple<uint64_t, uint64_t, uint32_t>{101, 8000, 9}, {100, 8001, 9}, {100, 8000, 10}}) {
    auto r = a.Landed(1, start, total, imm, 4000, 4000);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kProtocol);
    EXPECT_NE(r.status().message().find("another start, size or immediate"), std::string::npos) << r.status().message();
  }
  auto outside = a.Landed(1, 100, 8000, 9, 7000, 1001);
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.status().message().find("UD put 1: a piece of 1001 bytes at 7000 lies outside its 8000 bytes"),
            std::string::npos);
  // The same piece twice (which the reliability never delivers) overfills the put.
  ASSERT_TRUE(a.Landed(1, 100, 8000, 9, 4000, 3000).ok());
  auto over = a.Landed(1, 100, 8000, 9, 4000, 3000);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("more bytes landed than the put has"), std::string::npos);
}

// Many puts of one peer, their pieces shuffled together: each completes exactly once, with its
// own immediate, at its own last piece.
TEST(UdPutAssembly, InterleavedPutsEachCompleteOnce) {
  std::mt19937 rng(3);
  struct Piece {
    uint32_t put, at, bytes;
  };
  std::vector<Piece> all;
  std::vector<uint32_t> sizes;
  for (uint32_t put = 0; put < 50; ++put) {
    sizes.push_back(std::uniform_int_distribution<uint32_t>(0, 50000)(rng));
    for (const UdFragment& f : CutUdPut(sizes.back(), 4040)) all.push_back({put, f.at, f.bytes});
  }
  std::shuffle(all.begin(), all.end(), rng);
  UdPutAssembly a;
  std::vector<int> completed(50, 0);
  for (const Piece& p : all) {
    auto r = a.Landed(p.put, uint64_t{p.put} << 20, sizes[p.put], 1000 + p.put, p.at, p.bytes);
    ASSERT_TRUE(r.ok()) << r.status().message();
    if (r.value()) {
      EXPECT_EQ(*r.value(), 1000 + p.put);
      ++completed[p.put];
    }
  }
  for (uint32_t put = 0; put < 50; ++put) EXPECT_EQ(completed[put], 1) << put;
  EXPECT_EQ(a.incomplete(), 0u);
}

}  // namespace
}  // namespace ohio
