// Per-uid limits (daemon/control/group_registry.cc, control_server.cc): one user's half-joined groups
// cannot take the whole node's shared memory, a refusal names the limit and the uid's use, a
// group whose ranks never all join is dropped after its timeout and its memory released, and
// groups and client connections per uid are capped. Real daemon, real rank processes, one of
// the users an unprivileged uid.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/rank_job.h"

namespace ohio::testing {
namespace {

using std::chrono::seconds;

constexpr auto kDeadline = seconds(60);
constexpr uid_t kNobody = 65534;

bool Contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

// The rank tool, copied where another uid may run it (Bazel's cache is root's only).
std::string ToolForAnyone(const TempDir& dir) {
  const std::string tool = dir.file("alltoall_rank");
  {
    std::ifstream in(RunfilePath("tests/tools/alltoall_rank"), std::ios::binary);
    std::ofstream out(tool, std::ios::binary);
    out << in.rdbuf();
  }
  chmod(tool.c_str(), 0755);
  chmod(dir.path().c_str(), 0755);
  return tool;
}

// A rank (0 unless said) of a 2-rank group `name` of uid nobody: joins and waits without
// calling; alone, its group stays half-joined.
std::unique_ptr<Process> HalfJoined(const TempDir& dir, const std::string& tool, const Daemon& daemon,
                                    const std::string& name, const std::vector<std::string>& extra = {},
                                    int rank = 0) {
  std::vector<std::string> argv = {tool,   "--socket", daemon.socket(),       "--key",  KeyHex(name), "--size", "2",
                                   "--rank", std::to_string(rank), "--stall"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return std::make_unique<Process>(argv, dir.file(name + std::to_string(rank) + ".out"), kNobody);
}

TEST(UserLimits, HalfJoinedGroupsOfOneUserDoNotStarveAnother) {
  TempDir dir;
  // 128 MiB in all; a group on one node takes a 16 MiB SSB (and a page or two), so one uid's
  // 50% fits 3 of them, not 4.
  Daemon daemon(dir, {"--memory-limit", "128MiB", "--timeout-ms", "2000"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const std::string tool = ToolForAnyone(dir);
  std::vector<std::unique_ptr<Process>> hogs;
  for (int i = 0; i < 3; ++i) {
    hogs.push_back(HalfJoined(dir, tool, daemon, "hog" + std::to_string(i)));
    ASSERT_TRUE(hogs.back()->WaitForOutput("joined", kDeadline)) << hogs.back()->Output() << daemon.Log();
  }
  // The fourth is refused by the per-uid share, naming it and the uid's use.
  auto fourth = HalfJoined(dir, tool, daemon, "hog3", {"--expect", "not enough shared memory"});
  EXPECT_EQ(fourth->Wait(kDeadline), 0) << fourth->Output();
  EXPECT_TRUE(Contains(fourth->Output(), "uid 65534 already uses")) << fourth->Output();
  EXPECT_TRUE(Contains(fourth->Output(), "in 3 groups; one uid may use 67108864 (user-memory-percent = 50"))
      << fourth->Output();

  // Meanwhile root's job is served, verified byte for byte.
  RankJob job(dir, daemon.socket(), "root-job", 2, {"--bytes", "4096", "--iterations", "50"});
  for (int code : job.Wait(kDeadline)) EXPECT_EQ(code, 0) << job.Outputs() << daemon.Log();

  // Past the timeout the half-joined groups are dropped and their memory released.
  std::this_thread::sleep_for(seconds(3));
  const StatusQuery s = QueryStatus(daemon.admin_socket());
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.reply.groups(), 0u) << daemon.Log();
  EXPECT_EQ(s.reply.segment_bytes_in_use(), 0u) << daemon.Log();
  EXPECT_TRUE(Contains(daemon.Log(), "rank(s) 1 never joined on node")) << daemon.Log();
  EXPECT_TRUE(Contains(daemon.Log(), "the group is dropped and its memory released")) << daemon.Log();
  // So the same user may open a group again.
  auto again = HalfJoined(dir, tool, daemon, "hog4");
  EXPECT_TRUE(again->WaitForOutput("joined", kDeadline)) << again->Output() << daemon.Log();
}

TEST(UserLimits, GroupsAndConnectionsPerUid) {
  TempDir dir;
  Daemon daemon(dir, {"--user-max-groups", "2", "--user-max-clients", "3"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const std::string tool = ToolForAnyone(dir);
  auto a = HalfJoined(dir, tool, daemon, "a");
  auto b = HalfJoined(dir, tool, daemon, "b");
  ASSERT_TRUE(a->WaitForOutput("joined", kDeadline)) << a->Output();
  ASSERT_TRUE(b->WaitForOutput("joined", kDeadline)) << b->Output();
  auto c = HalfJoined(dir, tool, daemon, "c", {"--expect", "not enough shared memory"});
  EXPECT_EQ(c->Wait(kDeadline), 0) << c->Output();
  EXPECT_TRUE(Contains(c->Output(), "uid 65534 already has 2 groups on node")) << c->Output();
  EXPECT_TRUE(Contains(c->Output(), "user-max-groups = 2")) << c->Output();
  // Two connections of nobody are open (a, b); a third (the other rank of a) is served, a
  // fourth refused as it connects.
  auto third = HalfJoined(dir, tool, daemon, "a", {}, 1);
  ASSERT_TRUE(third->WaitForOutput("joined", kDeadline)) << third->Output();
  auto fourth = HalfJoined(dir, tool, daemon, "g", {"--expect", "refused"});
  EXPECT_EQ(fourth->Wait(kDeadline), 0) << fourth->Output();
  EXPECT_TRUE(Contains(fourth->Output(), "uid 65534 already has 3 connections to ohiod; user-max-clients = 3"))
      << fourth->Output();
  // Root is not held back by nobody's use.
  RankJob job(dir, daemon.socket(), "root-job", 2, {"--bytes", "64", "--iterations", "20"});
  for (int code : job.Wait(kDeadline)) EXPECT_EQ(code, 0) << job.Outputs() << daemon.Log();
}

}  // namespace
}  // namespace ohio::testing
