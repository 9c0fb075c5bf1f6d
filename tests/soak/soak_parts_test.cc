// The soak's pure parts: which errors it accepts, how it reads a rank and an MPI run, when it
// strikes and for how long.
#include <gtest/gtest.h>

#include <set>

#include "tests/soak/chaos_schedule.h"
#include "tests/soak/error_causes.h"
#include "tests/soak/mpi_run_report.h"
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
  ASSERT_GE(a.size(), 5u);
  std::set<FaultKind> first = {a[0].kind, a[1].kind, a[2].kind, a[3].kind, a[4].kind};
  EXPECT_EQ(first.size(), 5u);
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

TEST(ChaosSchedule, StopsLastAroundTheGroupTimeout) {
  bool shorter = false, longer = false;
  for (const Fault& f : PlanChaos(9, milliseconds(200000), milliseconds(100))) {
    const milliseconds length = StopLength(f.pick, milliseconds(10000));
    EXPECT_GE(length, milliseconds(7000));
    EXPECT_LE(length, milliseconds(13000));
    shorter |= length < milliseconds(10000);
    longer |= length > milliseconds(10000);
  }
  EXPECT_TRUE(shorter && longer);
}

TEST(ErrorCauses, AStoppedDaemonIsExpectedOnlyAfterAStop) {
  const ErrorCause* waited =
      CauseOf("timeout", "ohiod did not complete the alltoall within 10000 ms; ohiod (pid 4321) is stopped");
  ASSERT_NE(waited, nullptr);
  EXPECT_EQ(waited->name, "own daemon stopped");
  EXPECT_TRUE(waited->after_stop_only);
  const ErrorCause* hello = CauseOf("refused", "no Hello within hello-timeout-ms = 5000");
  ASSERT_NE(hello, nullptr);
  EXPECT_TRUE(hello->after_stop_only);
  // A timeout without the daemon stopped is no stop's.
  EXPECT_FALSE(CauseOf("timeout", "ohiod did not complete the alltoall within 10000 ms"));
}

TEST(ErrorCauses, ARankKilledWhileItsOneNodeDaemonIsDownTimesOutAfterAKillOnly) {
  for (const char* m : {"the other ranks did not enter the alltoall within 10000 ms",
                        "the other ranks did not finish reading this rank's send buffer within 10000 ms"}) {
    const ErrorCause* c = CauseOf("timeout", m);
    ASSERT_NE(c, nullptr) << m;
    EXPECT_EQ(c->name, "rank killed while its node's daemon was down");
    EXPECT_TRUE(c->after_kill_only);
  }
}

TEST(MpiRunReport, ReadsEachRanksTallyFailuresAndReasons) {
  const auto ranks = ParseMpiRun(
      "[1,0]<stdout>:rank 0: call 7 failed with MPI_ERR_OTHER\n"
      "[1,0]<stderr>:ohio: MPI_Alltoall failed: the ohio group failed (lost the connection to node n3's ohiod)\n"
      "[1,1]<stderr>:ohio: MPI_Alltoall failed: the ohio group failed (the connection to ohiod closed)\n"
      "[1,1]<stdout>:rank 1: call 7 failed with class 3\n"
      "[1,0]<stdout>:rank 0: calls 200 ok 199 failed 1 wrong_bytes 0\n"
      "[1,1]<stdout>:rank 1: calls 200 ok 198 failed 1 wrong_bytes 12\n"
      "rank 2: calls 200 ok 200 failed 0 wrong_bytes 0\n");  // untagged: not read
  ASSERT_EQ(ranks.size(), 2u);
  const MpiRankReport& r0 = ranks.at(0);
  ASSERT_TRUE(r0.tally);
  EXPECT_EQ(r0.tally->calls, 200u);
  EXPECT_EQ(r0.tally->ok, 199u);
  EXPECT_EQ(r0.tally->failed, 1u);
  EXPECT_EQ(r0.failed_with, std::vector<std::string>{"MPI_ERR_OTHER"});
  EXPECT_EQ(r0.reasons, std::vector<std::string>{"the ohio group failed (lost the connection to node n3's ohiod)"});
  const MpiRankReport& r1 = ranks.at(1);
  EXPECT_EQ(r1.tally->wrong_bytes, 12u);
  EXPECT_EQ(r1.failed_with, std::vector<std::string>{"class 3"});
}

}  // namespace
}  // namespace ohio::soak
