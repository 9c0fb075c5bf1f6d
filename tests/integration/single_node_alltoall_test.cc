// Alltoall through a real ohiod with real rank processes on one node: data checked byte for
// byte by every rank (tests/tools/alltoall_rank.cc), for every group size and message size.
#include <gtest/gtest.h>

#include "tests/harness/daemon_fixture.h"
#include "tests/harness/rank_job.h"

namespace ohio::testing {
namespace {

constexpr auto kJobDeadline = std::chrono::seconds(240);

class SingleNodeAlltoall : public ::testing::TestWithParam<uint32_t> {};

TEST_P(SingleNodeAlltoall, VerifiedForEverySize) {
  const uint32_t ranks = GetParam();
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  // Many calls of the small sizes, where rounds follow each other fastest (races show there);
  // fewer of 1 MiB, where 8 ranks make 64 MiB per node: more than the 16 MiB SSB, so each call is
  // staged in rounds.
  struct Sizes {
    std::vector<std::string> bytes;
    const char* iterations;
  };
  for (const Sizes& sizes : {Sizes{{"1", "7", "64", "4096"}, "200"}, Sizes{{"1048576"}, "20"}}) {
    std::vector<std::string> args = {"--bytes"};
    args.insert(args.end(), sizes.bytes.begin(), sizes.bytes.end());
    args.insert(args.end(), {"--iterations", sizes.iterations});
    RankJob job(dir, daemon.socket(), "sizes" + std::to_string(ranks) + "-" + sizes.iterations, ranks, args);
    auto codes = job.Wait(kJobDeadline);
    for (uint32_t r = 0; r < ranks; ++r) {
      EXPECT_EQ(codes[r], 0) << job.Outputs();
      const std::string out = job.rank(r).Output();
      for (const std::string& m : sizes.bytes) {
        EXPECT_NE(out.find("ok bytes=" + m + " iterations=" + sizes.iterations), std::string::npos) << out;
      }
    }
  }
  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
}

INSTANTIATE_TEST_SUITE_P(Ranks, SingleNodeAlltoall, ::testing::Values(1, 2, 3, 4, 8));

TEST(SingleNodeAlltoall, InPlaceAndEveryAlgorithm) {
  TempDir dir;
  Daemon daemon(dir, {"--ssb-bytes", "64KiB"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  for (const char* algo : {"v1", "v2", "v3"}) {
    // 3 ranks x 3 x 40000 bytes needs 360000 bytes of SSB: several rounds of a 64 KiB SSB.
    RankJob job(dir, daemon.socket(), std::string("inplace-") + algo, 3,
                {"--bytes", "5", "40000", "--iterations", "20", "--in-place", "--algorithm", algo});
    auto codes = job.Wait(kJobDeadline);
    for (int c : codes) EXPECT_EQ(c, 0) << algo << "\n" << job.Outputs();
  }
}

TEST(SingleNodeAlltoall, TwoGroupsOnOneDaemonAtOnce) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  RankJob a(dir, daemon.socket(), "job-a", 3, {"--bytes", "1", "4096", "--iterations", "300"});
  RankJob b(dir, daemon.socket(), "job-b", 4, {"--bytes", "7", "65536", "--iterations", "300"});
  auto ca = a.Wait(kJobDeadline);
  auto cb = b.Wait(kJobDeadline);
  for (int c : ca) EXPECT_EQ(c, 0) << a.Outputs();
  for (int c : cb) EXPECT_EQ(c, 0) << b.Outputs();
  // Each job was its own group on the one daemon.
  const std::string log = daemon.Log();
  size_t created = 0;
  for (size_t at = log.find("created for"); at != std::string::npos; at = log.find("created for", at + 1)) ++created;
  EXPECT_EQ(created, 2u) << log;
  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
}

}  // namespace
}  // namespace ohio::testing
