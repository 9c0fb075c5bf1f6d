// The soak's pure parts: which errors it accepts, how it reads a rank, when it strikes.
#include <gtest/gtest.h>

#include <set>

#include "tests/soak/chaos_schedule.h"
#include "tests/soak/error_causes.h"
#include "tests/soak/rank_report.h"

namespace ohio::soak {
namespace {

using std::chrono::milliseconds;

std::string NameOf(const std::string& code_name, const std::string& message) {
  const ErrorCause* c = CauseOf(code_name, message);
  return c == nullptr ? "(none)" : c->name;
}

TEST(ErrorCauses, EachExpectedMessageHasItsCause) {
  EXPECT_EQ(NameOf("group failed",
                    "rank 7 (pid 14861, uid 0) disconnected from ohiod without leaving the group; the group is closed"),
            "rank killed (told by its daemon)");
  EXPECT_EQ(NameOf("group failed", "rank 7 on node n3 disconnected from ohiod without leaving the group; the group is closed"),
            "rank killed (told by another node)");
  EXPECT_EQ(NameOf("group failed", "lost the connection to node n2's ohiod (closed by the peer); the group is closed"),
            "peer daemon lost");
  EXPECT_EQ(NameOf("daemon connection lost", "connection reset by peer"), "own daemon lost");
  EXPECT_EQ(NameOf("group failed",
                    "group 00ff has failed (rank 2 (pid 1, uid 0) disconnected from ohiod without leaving the group); "
                    "its ranks must leave before the key is reused"),
            "rank killed before this rank joined");
}

TEST(ErrorCauses, UnknownOrEmptyIsNoCause) {
  EXPECT_FALSE(CauseOf("group failed", ""));
  EXPECT_FALSE(CauseOf("daemon connection lost", ""));  // an empty message names nothing
  EXPECT_FALSE(CauseOf("refused", "node n3 refused the group: group 00ff has failed on node n3"));
  EXPECT_FALSE(CauseOf("protocol error", "ohiod: reading from ohiod: Connection reset by peer"));
  EXPECT_FALSE(CauseOf("timeout", "rank(s) 3 did not finish the alltoall within 10000 ms"));
  const ErrorCause* late = CauseOf("timeout", "rank 0 did not enter the alltoall within 10000 ms of the first rank");
  ASSERT_NE(late, nullptr);
  EXPECT_TRUE(late->after_kill_only);
}

TEST(RankReport, ReadsVerifiedErrorAndWrongBytes) {
  const RankReport ok = ParseRankReport("rank 1: joined\nrank 1: ok bytes=9 iterations=3\nrank 1: verified 3 calls\n");
  ASSERT_TRUE(ok.verified);
  EXPECT_EQ(*ok.verified, 3u);
  EXPECT_FALSE(ok.error);
  EXPECT_EQ(ok.wrong_bytes, 0u);

  const RankReport failed = ParseRankReport(
      "rank 0: joined\nrank 0: alltoall error code=7 (group failed) lost the connection to node n1's ohiod (x); the "
      "group is closed\nrank 0: verified 12 calls\n");
  ASSERT_TRUE(failed.error);
  EXPECT_EQ(failed.error->step, "alltoall");
  EXPECT_EQ(failed.error->code_name, "group failed");
  EXPECT_EQ(failed.error->message, "lost the connection to node n1's ohiod (x); the group is closed");
  EXPECT_EQ(*failed.verified, 12u);

  const RankReport wrong =
      ParseRankReport("rank 2: WRONG byte 5 from rank 0, bytes 64 iteration 1: got 1 want 2\nrank 2: verified 1 calls\n");
  EXPECT_EQ(wrong.wrong_bytes, 1u);

  EXPECT_FALSE(ParseRankReport("rank 3: joined\n").verified);  // killed, or crashed
}

TEST(ChaosSchedule, SameSeedSamePlanEveryKindFirstGapsBounded) {
  const auto a = PlanChaos(5, milliseconds(20000), milliseconds(400));
  const auto b = PlanChaos(5, milliseconds(20000), milliseconds(400));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].at, b[i].at);
    EXPECT_EQ(a[i].kind, b[i].kind);
    EXPECT_EQ(a[i].pick, b[i].pick);
  }
  ASSERT_GE(a.size(), 3u);
  std::set<FaultKind> first = {a[0].kind, a[1].kind, a[2].kind};
  EXPECT_EQ(first.size(), 3u);
  milliseconds previous(0);
  for (const Fault& f : a) {
    EXPECT_GE(f.at - previous, milliseconds(200));
    EXPECT_LE(f.at - previous, milliseconds(600));
    EXPECT_LT(f.at, milliseconds(20000));
    previous = f.at;
  }
  EXPECT_GE(a.size(), 20000u / 600);
  EXPECT_LE(a.size(), 20000u / 200);
}

}  // namespace
}  // namespace ohio::soak
