// ohio_ialltoall (client/libohio/nonblocking_alltoalls.h, daemon/engine/nonblocking_alltoall.h) through a real daemon
// and real rank processes: the ranks start several calls, then touch nothing of ohio while the
// daemon moves the data into their receive buffers (tests/tools/ialltoall_rank.cc watches them
// fill with plain loads, then ohio_test must find every call complete); every byte is checked,
// and the daemon counts exactly the calls and bytes. A size mismatch and an unmapped buffer fail
// the call on every rank and the group goes on; a rank that dies with a call outstanding fails
// the others' wait instead of hanging them, and so does one that starts past the group's
// timeout. ohio_ialltoallv the same way: counts per pair (a third of them zero), blocks out of
// order with gaps that must stay unwritten, a pair whose counts differ reported alike on every
// rank. Across nodes: ialltoall_across_nodes_test.cc.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/rank_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(90);
constexpr const char* kTool = "tests/tools/ialltoall_rank";

RankJob OneNodeJob(const TempDir& dir, Daemon& d, uint32_t size, const std::string& name,
                   const std::vector<std::string>& args) {
  return RankJob(dir, d.socket(), name, size, args, nullptr, kTool);
}

void AllPass(RankJob& job) {
  for (int c : job.Wait(kDeadline)) EXPECT_EQ(c, 0) << job.Outputs();
}

TEST(Ialltoall, TheDaemonMovesOutstandingCallsWhileTheRanksCompute) {
  TempDir dir;
  Daemon daemon(dir, {});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  // 2 batches of 3 outstanding calls of 5000 bytes per rank, one of them in place; each batch
  // is lined up by one blocking alltoall of 1 byte per rank.
  RankJob job = OneNodeJob(dir, daemon, 3, "unaided", {"--batches", "2", "--outstanding", "3", "--bytes", "5000"});
  AllPass(job);
  for (uint32_t r = 0; r < 3; ++r) {
    EXPECT_NE(job.rank(r).Output().find("ok moved_unaided=6 verified_bytes=90000"), std::string::npos)
        << job.rank(r).Output();
  }
  // 6 calls moved by the daemon plus the 2 blocking ones the ranks made themselves; bytes
  // between the ranks: 6 x 3 x 3 x 5000, and 2 x 3 x 3 x 1.
  const admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(c.collectives_served(), 8u);
  EXPECT_EQ(c.bytes_local(), 6u * 9 * 5000 + 2u * 9);
  EXPECT_EQ(c.collectives_failed(), 0u);
}

TEST(Ialltoall, OnlyTheLastRankToPostWakesTheDaemon) {
  TempDir dir;
  Daemon daemon(dir, {});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const admin::CountersReply before = QueryCounters(daemon.admin_socket());
  // 4 batches of one call; rank r starts 30 ms x r after each line-up, so the daemon is asleep
  // at every start. Nothing can move before the last start: the others must not ring (each ring
  // wakes the daemon, which on a busy node preempts the rank that rang, for nothing).
  constexpr uint32_t kCalls = 4;
  RankJob job(
      dir, daemon.socket(), "rings", 3, {"--batches", std::to_string(kCalls), "--outstanding", "1", "--bytes", "5000"},
      [](uint32_t r) { return std::vector<std::string>{"--delay-starting-ms", std::to_string(30 * r)}; }, kTool);
  AllPass(job);
  const admin::CountersReply after = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(after.collectives_served() - before.collectives_served(), 2 * kCalls);  // and the line-ups
  // One wake-up per call at most (fewer only if a tick had woken the daemon just then), where
  // a ring from every start made 3.
  EXPECT_GE(after.engine_wakeups() - before.engine_wakeups(), 1u);
  EXPECT_LE(after.engine_wakeups() - before.engine_wakeups(), kCalls);
}

TEST(Ialltoall, MoreOutstandingThanTheRingHolds) {
  TempDir dir;
  Daemon daemon(dir, {});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  // 11 calls outstanding on a ring of 8: starting the ninth waits for the first to be moved.
  RankJob job = OneNodeJob(dir, daemon, 2, "deep", {"--outstanding", "11", "--bytes", "300"});
  AllPass(job);
  for (uint32_t r = 0; r < 2; ++r) {
    EXPECT_NE(job.rank(r).Output().find("ok moved_unaided=11 verified_bytes=6600"), std::string::npos)
        << job.rank(r).Output();
  }
}

// Every rank reports the same error text for call 0, and the calls after it are verified.
void SameErrorEverywhere(RankJob& job, const std::string& code_and_name, const std::regex& text) {
  std::string first;
  for (uint32_t r = 0; r < job.size(); ++r) {
    std::smatch m;
    const std::string out = job.rank(r).Output();
    ASSERT_TRUE(std::regex_search(out, m, std::regex("call 0: code=" + code_and_name + " (.*)"))) << out;
    EXPECT_TRUE(std::regex_match(std::string(m[1]), text)) << m[1];
    if (first.empty()) first = m[1];
    EXPECT_EQ(m[1], first) << "every rank reports the same error";
    EXPECT_NE(out.find("ok moved_unaided=3 "), std::string::npos) << out;
  }
}

TEST(Ialltoall, ASizeMismatchFailsEveryRankAndTheGroupGoesOn) {
  TempDir dir;
  Daemon daemon(dir, {});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  RankJob job = OneNodeJob(dir, daemon, 3, "mismatch", {"--outstanding", "4", "--bytes", "64", "--mismatch-rank", "2"});
  AllPass(job);
  SameErrorEverywhere(job, "6 \\(size mismatch\\)", std::regex("ranks disagree on the bytes per rank of this alltoall: 64 from ranks 0,1; 65 from rank 2"));
  const admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(c.collectives_failed(), 1u);
  EXPECT_EQ(c.collectives_served(), 4u);  // the 3 calls after it, and the blocking one
}

TEST(Ialltoall, AnUnmappedBufferFailsEveryRankAndTheGroupGoesOn) {
  TempDir dir;
  Daemon daemon(dir, {});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  RankJob job = OneNodeJob(dir, daemon, 3, "unmapped", {"--outstanding", "4", "--bytes", "64", "--unmapped-rank", "1"});
  AllPass(job);
  SameErrorEverywhere(job, "1 \\(invalid argument\\)",
                      std::regex("rank 1 \\(pid \\d+\\): its receive buffer \\(192 bytes at 0x1000\\) is not mapped "
                                 "writable in its process"));
}

// The bytes a rank verified, from its "ok" line.
uint64_t VerifiedBytes(const std::string& output) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex("verified_bytes=(\\d+)"))) return 0;
  return std::stoull(m[1]);
}

TEST(Ialltoallv, TheDaemonMovesEveryPairWhereTheTablesSay) {
  TempDir dir;
  Daemon daemon(dir, {});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  RankJob job = OneNodeJob(dir, daemon, 3, "vector",
                           {"--vector", "--batches", "2", "--outstanding", "3", "--bytes", "700"});
  AllPass(job);
  uint64_t verified = 0;
  for (uint32_t r = 0; r < 3; ++r) {
    EXPECT_NE(job.rank(r).Output().find("ok moved_unaided=6 "), std::string::npos) << job.rank(r).Output();
    verified += VerifiedBytes(job.rank(r).Output());
  }
  // The daemon moved exactly what the ranks verified, besides the 2 line-ups of 1 byte.
  const admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_GT(verified, 0u);
  EXPECT_EQ(c.bytes_local(), verified + 2u * 9);
  EXPECT_EQ(c.collectives_served(), 8u);
  EXPECT_EQ(c.collectives_failed(), 0u);
}

TEST(Ialltoallv, APairWhoseCountsDifferFailsEveryRankAndTheGroupGoesOn) {
  TempDir dir;
  Daemon daemon(dir, {});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  // Rank 2 sends rank 0 one byte more than rank 0 expects (67) in the first call.
  RankJob job = OneNodeJob(dir, daemon, 3, "vmismatch",
                           {"--vector", "--outstanding", "4", "--bytes", "64", "--mismatch-rank", "2"});
  AllPass(job);
  SameErrorEverywhere(job, "6 \\(size mismatch\\)",
                      std::regex("ranks disagree on the counts of this alltoallv: rank 2 sends 68 bytes to rank 0, "
                                 "which expects 67"));
  const admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(c.collectives_failed(), 1u);
  EXPECT_EQ(c.collectives_served(), 4u);
}

TEST(Ialltoallv, AnUnmappedBufferFailsEveryRankAndTheGroupGoesOn) {
  TempDir dir;
  Daemon daemon(dir, {});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  // Rank 1 receives 67 bytes from rank 0, none from itself and 70 from rank 2.
  RankJob job = OneNodeJob(dir, daemon, 3, "vunmapped",
                           {"--vector", "--outstanding", "4", "--bytes", "64", "--unmapped-rank", "1"});
  AllPass(job);
  SameErrorEverywhere(job, "1 \\(invalid argument\\)",
                      std::regex("rank 1 \\(pid \\d+\\): its receive buffer \\(137 bytes at 0x1000\\) is not mapped "
                                 "writable in its process"));
}

TEST(Ialltoallv, ARankThatPostsAnotherCollectiveFailsEveryRankAndTheGroupGoesOn) {
  TempDir dir;
  Daemon daemon(dir, {});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  RankJob job = OneNodeJob(dir, daemon, 3, "vkind",
                           {"--vector", "--outstanding", "4", "--bytes", "64", "--alltoall-rank", "1"});
  AllPass(job);
  SameErrorEverywhere(job, "1 \\(invalid argument\\)",
                      std::regex("ranks started different collectives as nonblocking call 1: an alltoallv from "
                                 "ranks 0,2, an alltoall from rank 1"));
}

TEST(Ialltoall, ARankThatDiesWithACallOutstandingFailsTheOthersWait) {
  TempDir dir;
  Daemon daemon(dir, {});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  // Rank 1 exits after the line-up without starting; rank 0 starts and waits for a call that can
  // never be moved (or finds the group closed as it starts).
  RankJob job(
      dir, daemon.socket(), "dies", 2, {"--outstanding", "1", "--bytes", "64", "--wait"},
      [](uint32_t r) { return r == 1 ? std::vector<std::string>{"--die-before-starting"} : std::vector<std::string>{}; },
      kTool);
  const auto codes = job.Wait(kDeadline);
  EXPECT_EQ(codes[1], 3);
  EXPECT_EQ(codes[0], 1) << job.Outputs();
  EXPECT_TRUE(std::regex_search(job.rank(0).Output(),
                                std::regex("code=7 \\(group failed\\) rank 1 \\(pid \\d+.*\\) disconnected")))
      << job.Outputs();
}

TEST(Ialltoall, ARankThatDoesNotPostInTimeFailsTheGroupOnEveryRank) {
  TempDir dir;
  Daemon daemon(dir, {"--timeout-ms", "300"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  // Rank 1 starts 2 s after rank 0, long past the group's timeout.
  RankJob job(
      dir, daemon.socket(), "late", 2, {"--outstanding", "1", "--bytes", "64", "--wait"},
      [](uint32_t r) { return r == 1 ? std::vector<std::string>{"--delay-starting-ms", "2000"} : std::vector<std::string>{}; },
      kTool);
  const auto codes = job.Wait(kDeadline);
  const std::regex timed_out("code=8 \\(timeout\\) rank 1 did not start nonblocking alltoall 1 within 300 ms of the "
                             "others; the group is closed");
  for (uint32_t r = 0; r < 2; ++r) {
    EXPECT_EQ(codes[r], 1) << job.Outputs();
    EXPECT_TRUE(std::regex_search(job.rank(r).Output(), timed_out)) << job.Outputs();
  }
  EXPECT_EQ(QueryCounters(daemon.admin_socket()).groups_failed(), 1u);
}

}  // namespace
}  // namespace ohio::testing
