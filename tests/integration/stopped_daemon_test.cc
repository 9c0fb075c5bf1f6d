// A stopped ohiod (SIGSTOP: a debugger, job control, a wedged node) costs a rank at most the
// group's timeout, not its whole life: leaving a group, saying hello and a collective across
// nodes each end within the timeout (plus 1 s of slack for the test) with an error saying ohiod
// did not answer and is stopped; once continued, the daemon releases what the ranks held and
// serves the next job. A nonblocking alltoall completed by an ohio_test loop (each test never
// waits) or by ohio_wait ends by the same deadline, on one node and across nodes; and a connect
// to a daemon whose listen backlog is full ends at OHIO_TIMEOUT_MS.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <functional>
#include <regex>
#include <vector>

#include "common/unix_socket.h"
#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/rank_job.h"
#include "tests/harness/scoped_env.h"
#include "tests/harness/stopped_process.h"
#include "tests/harness/wait_until.h"

namespace ohio::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kDeadline = seconds(60);
constexpr int kTimeoutMs = 1500;
// How long past the group's timeout a rank may take to end: its own last steps, and a loaded
// machine's scheduling.
constexpr auto kSlack = seconds(1);

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// The ranks of `job`, held (--hold-after-first `go`) while their daemon was stopped, go on;
// their exit codes once they end, or -1 for a rank still running when the group's timeout and
// the slack have passed; and how long they took.
struct ReleasedRun {
  std::vector<int> codes;
  std::chrono::steady_clock::duration took;
};
ReleasedRun Release(RankJob& job, const std::string& go) {
  std::ofstream(go) << "go\n";
  const auto start = std::chrono::steady_clock::now();
  ReleasedRun run;
  run.codes = job.Wait(milliseconds(kTimeoutMs) + kSlack);
  run.took = std::chrono::steady_clock::now() - start;
  return run;
}

std::string StoppedText(pid_t pid) { return "; ohiod (pid " + std::to_string(pid) + ") is stopped"; }

TEST(StoppedDaemon, LeavingEndsAtTheGroupsTimeoutAndTheDaemonServesOnceContinued) {
  TempDir dir;
  Daemon daemon(dir, {"--timeout-ms", std::to_string(kTimeoutMs)});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const std::string go = dir.file("go");
  // The second call runs with the daemon stopped: a group on one node needs no daemon for its
  // calls, only to be left.
  RankJob job(dir, daemon.socket(), "stopped-leave", 3,
              {"--bytes", "4096", "--iterations", "2", "--hold-after-first", go, "--expect-leave", "timeout"});
  for (uint32_t r = 0; r < job.size(); ++r) ASSERT_TRUE(job.rank(r).WaitForOutput("holding", kDeadline)) << job.Outputs();
  StoppedForScope stopped(daemon.pid());
  ASSERT_TRUE(stopped.stopped());
  const ReleasedRun run = Release(job, go);
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_EQ(run.codes[r], 0) << job.Outputs();
    EXPECT_TRUE(Contains(job.rank(r).Output(), "ok bytes=4096 iterations=2")) << job.rank(r).Output();
    EXPECT_TRUE(Contains(job.rank(r).Output(), "leave error code=8 (timeout) ohiod did not answer leave within 1500 ms" +
                                                   StoppedText(daemon.pid())))
        << job.rank(r).Output();
  }
  EXPECT_GE(run.took, milliseconds(kTimeoutMs));
  EXPECT_LE(run.took, milliseconds(kTimeoutMs) + kSlack);

  // A hello waits as long as OHIO_TIMEOUT_MS says (no group, no group's timeout yet).
  {
    ScopedEnv timeout("OHIO_TIMEOUT_MS", "1000");
    RankJob hello(dir, daemon.socket(), "stopped-hello", 1, {"--expect", "timeout"});
    EXPECT_EQ(hello.Wait(milliseconds(1000) + kSlack)[0], 0) << hello.Outputs();
    EXPECT_TRUE(Contains(hello.rank(0).Output(), "connect error code=8 (timeout) ohiod did not answer hello within 1000 ms" +
                                                     StoppedText(daemon.pid())))
        << hello.Outputs();
  }

  // Continued, the daemon finds the ranks gone, releases their group and serves a new job.
  stopped.Continue();
  EXPECT_TRUE(WaitUntil([&] { return CountOpenFds(daemon.pid(), "memfd:ohio-group") == 0; }, seconds(10)))
      << daemon.Log();
  RankJob again(dir, daemon.socket(), "after-continue", 2, {"--bytes", "1", "4096", "--iterations", "100"});
  for (int c : again.Wait(kDeadline)) EXPECT_EQ(c, 0) << again.Outputs();
  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
}

// Ranks of `tool` on two nodes whose daemons time groups out at kTimeoutMs, 2 on each, run with
// `args` and hold (`hold_flag` FILE) until node 1's daemon is stopped: every rank ends within the
// timeout and the slack, with exit code 0, and `expect(r, output, stopped pid)` holds. Once
// continued, the daemon serves a new job across both nodes.
void ExpectTheTimeoutWithNode1Stopped(const std::string& tool, std::vector<std::string> args,
                                      const std::string& hold_flag,
                                      const std::function<void(uint32_t, const std::string&, pid_t)>& expect) {
  TempDir dir;
  Cluster cluster(dir, 2, {"--timeout-ms", std::to_string(kTimeoutMs)});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::string go = dir.file("go");
  args.insert(args.end(), {hold_flag, go});
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 2), "stopped-across", args,
              nullptr, std::nullopt, tool);
  for (uint32_t r = 0; r < job.size(); ++r) ASSERT_TRUE(job.rank(r).WaitForOutput("holding", kDeadline)) << job.Outputs();
  const pid_t stopped_pid = cluster.node(1).pid();
  StoppedForScope stopped(stopped_pid);
  ASSERT_TRUE(stopped.stopped());
  const ReleasedRun run = Release(job, go);
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_EQ(run.codes[r], 0) << job.Outputs() << cluster.Logs();
    expect(r, job.rank(r).Output(), stopped_pid);
  }
  EXPECT_LE(run.took, milliseconds(kTimeoutMs) + kSlack);

  stopped.Continue();
  RankJob again(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 2), "after-continue",
                {"--bytes", "1", "4096", "--iterations", "100"});
  for (int c : again.Wait(kDeadline)) EXPECT_EQ(c, 0) << again.Outputs() << cluster.Logs();
  for (uint32_t i = 0; i < cluster.size(); ++i) EXPECT_EQ(cluster.node(i).Stop(), 0) << cluster.Logs();
}

TEST(StoppedDaemon, ACollectiveAcrossNodesEndsAtTheTimeoutOnEveryNode) {
  // Every rank: the call fails at the timeout, and leaving costs no second one.
  ExpectTheTimeoutWithNode1Stopped(
      RankJob::kAlltoallRank, {"--bytes", "64", "--iterations", "2", "--expect", "timeout"}, "--hold-after-first",
      [](uint32_t r, const std::string& out, pid_t stopped_pid) {
        EXPECT_TRUE(Contains(out, "alltoall error code=8 (timeout)")) << out;
        if (r / 2 == 1) {
          // Their own daemon is the stopped one: they say so themselves, and give it up.
          EXPECT_TRUE(
              Contains(out, "ohiod did not receive the other nodes' blocks within 1500 ms" + StoppedText(stopped_pid)))
              << out;
          EXPECT_TRUE(Contains(out, "leave after the error code=9 (daemon connection lost)")) << out;
        } else {
          // Their daemon runs: it times the round out and says whom it waited for.
          EXPECT_TRUE(Contains(out, "node n0 was waiting for the ranks of node(s) n1")) << out;
          EXPECT_TRUE(Contains(out, "leave after the error code=0 (ok)")) << out;
        }
      });
}

constexpr const char* kIalltoallRank = "tests/tools/ialltoall_rank";

// The "after N ms" of a rank's completion line, or -1.
long CompletionMs(const std::string& out) {
  std::smatch m;
  return std::regex_search(out, m, std::regex(R"(completion done=1 .* after (\d+) ms)")) ? std::stol(m[1]) : -1;
}

// Ranks that start a nonblocking alltoall once their daemon is stopped and complete it by a loop
// of ohio_test (each of which returns at once) or by ohio_wait: the call ends with a timeout at
// the group's timeout, not never (the tests' deadline is not restarted by each test).
// `completion`: "--wait" for ohio_wait, "" for the ohio_test loop.
void ExpectNonblockingEndsAtTheTimeout(const std::string& completion) {
  TempDir dir;
  Daemon daemon(dir, {"--timeout-ms", std::to_string(kTimeoutMs)});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const std::string go = dir.file("go");
  std::vector<std::string> args = {"--bytes", "4096", "--hold-before-starting", go, "--expect-completion", "timeout"};
  if (!completion.empty()) args.push_back(completion);
  RankJob job(dir, daemon.socket(), "stopped-nonblocking", 3, args, nullptr, kIalltoallRank);
  for (uint32_t r = 0; r < job.size(); ++r) ASSERT_TRUE(job.rank(r).WaitForOutput("holding", kDeadline)) << job.Outputs();
  StoppedForScope stopped(daemon.pid());
  ASSERT_TRUE(stopped.stopped());
  const ReleasedRun run = Release(job, go);
  for (uint32_t r = 0; r < job.size(); ++r) {
    const std::string out = job.rank(r).Output();
    EXPECT_EQ(run.codes[r], 0) << out;
    // Every rank posted at once: ohiod is the one that did not do its part.
    EXPECT_TRUE(Contains(out, "completion done=1 code=8 (timeout) ohiod did not complete the nonblocking alltoall "
                              "within 1500 ms" + StoppedText(daemon.pid())))
        << out;
    EXPECT_GE(CompletionMs(out), kTimeoutMs) << out;
    EXPECT_LE(CompletionMs(out), kTimeoutMs + 1000) << out;
    // Given up on as after a blocking call: leaving costs no second timeout.
    EXPECT_TRUE(Contains(out, "leave code=9 (daemon connection lost)")) << out;
  }
  EXPECT_LE(run.took, milliseconds(kTimeoutMs) + kSlack);
  stopped.Continue();
  EXPECT_TRUE(WaitUntil([&] { return CountOpenFds(daemon.pid(), "memfd:ohio-group") == 0; }, seconds(10)))
      << daemon.Log();
  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
}

TEST(StoppedDaemon, AnOhioTestLoopOnOneNodeEndsAtTheTimeout) { ExpectNonblockingEndsAtTheTimeout(""); }

TEST(StoppedDaemon, OhioWaitOnOneNodeEndsAtTheTimeout) { ExpectNonblockingEndsAtTheTimeout("--wait"); }

TEST(StoppedDaemon, AnOhioTestLoopAcrossNodesEndsAtTheTimeoutOnEveryNode) {
  ExpectTheTimeoutWithNode1Stopped(
      kIalltoallRank, {"--bytes", "64", "--expect-completion", "timeout"}, "--hold-before-starting",
      [](uint32_t r, const std::string& out, pid_t stopped_pid) {
        EXPECT_LE(CompletionMs(out), kTimeoutMs + 1000) << out;
        if (r / 2 == 1) {
          // Their own daemon is the stopped one: they say so themselves, and give it up.
          EXPECT_TRUE(Contains(out, "completion done=1 code=8 (timeout) ohiod did not complete the nonblocking "
                                    "alltoall within 1500 ms" + StoppedText(stopped_pid)))
              << out;
          EXPECT_GE(CompletionMs(out), kTimeoutMs) << out;
          EXPECT_TRUE(Contains(out, "leave code=9 (daemon connection lost)")) << out;
        } else {
          // Their daemon runs: it times the call's round out and says whom it waited for.
          EXPECT_TRUE(Contains(out, "completion done=1 code=8 (timeout) round 2 did not complete within 1500 ms: "
                                    "node n0 was waiting for the ranks of node(s) n1"))
              << out;
          EXPECT_TRUE(Contains(out, "leave code=0 (ok)")) << out;
        }
      });
}

// With ohiod stopped and its listen backlog full, a rank's connect fails at OHIO_TIMEOUT_MS with
// the reason, instead of blocking in connect for as long as the daemon stays stopped.
TEST(StoppedDaemon, AConnectToAFullBacklogEndsAtTheTimeout) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  StoppedForScope stopped(daemon.pid());
  ASSERT_TRUE(stopped.stopped());
  // ohiod listens with a backlog of 512: fill it with connects nobody accepts.
  struct rlimit files = {4096, 4096};
  getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = std::max<rlim_t>(files.rlim_cur, std::min<rlim_t>(files.rlim_max, 4096));
  setrlimit(RLIMIT_NOFILE, &files);
  auto addr = UnixAddress(daemon.socket());
  ASSERT_TRUE(addr.ok());
  std::vector<int> flood;
  int refused = 0;
  while (flood.size() < 2000) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    if (connect(fd, reinterpret_cast<const sockaddr*>(&addr.value()), sizeof(sockaddr_un)) != 0) {
      refused = errno;
      close(fd);
      break;
    }
    flood.push_back(fd);
  }
  ASSERT_EQ(refused, EAGAIN) << "the backlog never filled: " << flood.size() << " connections";
  {
    ScopedEnv timeout("OHIO_TIMEOUT_MS", "3000");
    const auto start = std::chrono::steady_clock::now();
    RankJob job(dir, daemon.socket(), "full-backlog", 1, {"--expect", "timeout"});
    EXPECT_EQ(job.Wait(milliseconds(3000) + kSlack)[0], 0) << job.Outputs();
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_TRUE(Contains(job.rank(0).Output(), "connect error code=8 (timeout) ohiod did not accept the connection "
                                                "within 3000 ms: the listen backlog of " + daemon.socket() +
                                                " stayed full"))
        << job.Outputs();
    EXPECT_GE(took, milliseconds(3000));
    EXPECT_LE(took, milliseconds(3000) + kSlack);
  }
  for (int fd : flood) close(fd);
  stopped.Continue();
  RankJob again(dir, daemon.socket(), "after-flood", 2, {"--bytes", "4096", "--iterations", "10"});
  for (int c : again.Wait(kDeadline)) EXPECT_EQ(c, 0) << again.Outputs();
  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
}

TEST(StoppedDaemon, ATimeoutThatIsNotANumberIsRefusedAtConnect) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  ScopedEnv timeout("OHIO_TIMEOUT_MS", "soon");
  RankJob job(dir, daemon.socket(), "bad-timeout", 1, {"--expect", "invalid argument"});
  EXPECT_EQ(job.Wait(kDeadline)[0], 0) << job.Outputs();
  EXPECT_TRUE(Contains(job.rank(0).Output(), "OHIO_TIMEOUT_MS must be a number of milliseconds from 1 to 86400000, not 'soon'"))
      << job.Outputs();
}

}  // namespace
}  // namespace ohio::testing
