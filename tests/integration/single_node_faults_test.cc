// Bad input and failures on one node, with a real ohiod and real rank processes: every rank
// gets a clear error, nothing hangs (every wait has a deadline far below the daemon's own
// timeout unless the timeout is what is tested), resources are released, and the daemon goes
// on serving other groups.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <thread>

#include "common/framed_socket.h"
#include "common/unix_socket.h"
#include "common/version.h"
#include "proto/control.pb.h"
#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/rank_job.h"
#include "tests/harness/wait_until.h"

namespace ohio::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kDeadline = seconds(60);

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A job of two ranks that must succeed: the daemon still serves other groups.
void ExpectHealthyJob(const TempDir& dir, const std::string& socket, const std::string& name) {
  RankJob job(dir, socket, name, 2, {"--bytes", "1", "4096", "--iterations", "100"});
  for (int c : job.Wait(kDeadline)) EXPECT_EQ(c, 0) << job.Outputs();
}

TEST(SingleNodeFaults, SizeMismatchErrorsEveryRankAndTheGroupStaysUsable) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  RankJob bystander(dir, daemon.socket(), "bystander", 2, {"--bytes", "4096", "--iterations", "2000"});
  RankJob job(dir, daemon.socket(), "mismatch", 4, {"--bytes", "64", "--expect", "size mismatch"},
              [](uint32_t r) { return r == 2 ? std::vector<std::string>{"--my-bytes", "128"} : std::vector<std::string>{}; });
  auto codes = job.Wait(kDeadline);
  for (uint32_t r = 0; r < 4; ++r) {
    EXPECT_EQ(codes[r], 0) << job.Outputs();
    const std::string out = job.rank(r).Output();
    EXPECT_TRUE(Contains(out, "alltoall error code=6 (size mismatch)")) << out;
    EXPECT_TRUE(Contains(out, "64 from ranks 0,1,3; 128 from rank 2")) << out;
    EXPECT_TRUE(Contains(out, "after mismatch ok")) << out;
  }
  for (int c : bystander.Wait(kDeadline)) EXPECT_EQ(c, 0) << bystander.Outputs();
  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
}

// A NULL buffer is the caller's mistake on one rank: that rank gets 'invalid argument' and the
// others 'opted out' naming it at once (not the group's timeout), and the calls after it are
// verified byte for byte, so the group stays usable.
TEST(SingleNodeFaults, NullBufferOnOneRankFailsThatCallOnEveryRankAtOnce) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  RankJob job(dir, daemon.socket(), "null-send", 4, {"--bytes", "200", "--iterations", "5"}, [](uint32_t r) {
    return std::vector<std::string>{r == 1 ? "--null-send-at" : "--opted-out-at", "2"};
  });
  auto codes = job.Wait(kDeadline);
  for (uint32_t r = 0; r < 4; ++r) {
    EXPECT_EQ(codes[r], 0) << job.Outputs();
    const std::string out = job.rank(r).Output();
    if (r == 1) {
      EXPECT_TRUE(Contains(out, "call 2: code=1 (invalid argument) send and recv must not be NULL")) << out;
    } else {
      EXPECT_TRUE(Contains(out, "call 2: code=12 (opted out) rank 1 opted out of this alltoall")) << out;
    }
    EXPECT_TRUE(Contains(out, "ok bytes=200 iterations=5")) << out;
  }
  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
}

// A program built against an older ohio.h opts out through ohio_alltoall_skip and checks for
// OHIO_ERR_SKIPPED: both old names still work, the other ranks are told at once who opted out,
// and the calls after it are verified byte for byte.
TEST(SingleNodeFaults, OptOutThroughTheOldNamesStillWorks) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  RankJob job(dir, daemon.socket(), "old-opt-out", 4, {"--bytes", "200", "--iterations", "5"}, [](uint32_t r) {
    return r == 1 ? std::vector<std::string>{"--opt-out-at", "2", "--old-opt-out-names"}
                  : std::vector<std::string>{"--opted-out-at", "2"};
  });
  auto codes = job.Wait(kDeadline);
  for (uint32_t r = 0; r < 4; ++r) {
    EXPECT_EQ(codes[r], 0) << job.Outputs();
    const std::string out = job.rank(r).Output();
    EXPECT_TRUE(Contains(out, "call 2: code=12 (opted out) rank 1 opted out of this alltoall")) << out;
    EXPECT_TRUE(Contains(out, "ok bytes=200 iterations=5")) << out;
  }
  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
}

TEST(SingleNodeFaults, RankKilledWhileOthersWaitInTheCollective) {
  TempDir dir;
  // The timeout is far away: the death must be noticed from the closed connection.
  Daemon daemon(dir, {"--timeout-ms", "120000"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  RankJob job(dir, daemon.socket(), "killed", 4, {"--bytes", "4096", "--expect", "group failed"},
              [](uint32_t r) { return r == 3 ? std::vector<std::string>{"--stall"} : std::vector<std::string>{}; });
  for (uint32_t r = 0; r < 4; ++r) ASSERT_TRUE(job.rank(r).WaitForOutput("joined", kDeadline)) << job.Outputs();
  EXPECT_EQ(CountOpenFds(daemon.pid(), "memfd:ohio-group"), 1);
  EXPECT_EQ(CountMappings(daemon.pid(), "memfd:ohio-group"), 1);
  std::this_thread::sleep_for(milliseconds(300));  // ranks 0-2 are inside the alltoall now
  job.rank(3).Signal(SIGKILL);
  auto codes = job.Wait(seconds(20));
  for (uint32_t r = 0; r < 3; ++r) {
    EXPECT_EQ(codes[r], 0) << job.Outputs();
    EXPECT_TRUE(Contains(job.rank(r).Output(), "rank 3 (pid")) << job.rank(r).Output();
    EXPECT_TRUE(Contains(job.rank(r).Output(), "disconnected from ohiod without leaving")) << job.rank(r).Output();
  }
  // Once every rank is gone the daemon holds neither the segment's fd nor its mapping.
  EXPECT_TRUE(WaitUntil([&] { return CountOpenFds(daemon.pid(), "memfd:ohio-group") == 0; }, seconds(10)));
  EXPECT_TRUE(WaitUntil([&] { return CountMappings(daemon.pid(), "memfd:ohio-group") == 0; }, seconds(10)));
  ExpectHealthyJob(dir, daemon.socket(), "after-kill");
  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
}

// A rank that joins a group after another rank of it died is told the group failed and why,
// not that its join was refused.
TEST(SingleNodeFaults, JoiningAGroupThatAlreadyFailedSaysWhy) {
  TempDir dir;
  Daemon daemon(dir, {"--timeout-ms", "120000"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  auto rank = [&](uint32_t r, const std::vector<std::string>& more) {
    std::vector<std::string> argv = {RunfilePath("tests/tools/alltoall_rank"), "--socket", daemon.socket(), "--key",
                                     KeyHex("failed-before-join"), "--size", "3", "--rank", std::to_string(r)};
    argv.insert(argv.end(), more.begin(), more.end());
    return std::make_unique<Process>(argv, dir.file("late-join" + std::to_string(r) + ".out"));
  };
  auto stays = rank(1, {"--stall"});  // keeps the failed group (and its key) on the daemon
  auto dies = rank(2, {"--stall"});
  ASSERT_TRUE(stays->WaitForOutput("joined", kDeadline)) << stays->Output();
  ASSERT_TRUE(dies->WaitForOutput("joined", kDeadline)) << dies->Output();
  dies->Signal(SIGKILL);
  dies->Wait(kDeadline);
  // The daemon learns of the death from the socket's close, after the process is reaped: a
  // join before that would find the group still open (CI saw it once under ASan).
  ASSERT_TRUE(WaitUntil([&] { return QueryCounters(daemon.admin_socket()).groups_failed() == 1; }, seconds(10)))
      << daemon.Log();
  auto late = rank(0, {"--expect", "group failed"});
  EXPECT_EQ(late->Wait(kDeadline), 0) << late->Output() << daemon.Log();
  EXPECT_TRUE(Contains(late->Output(), "join error code=7 (group failed) group ")) << late->Output();
  EXPECT_TRUE(Contains(late->Output(), "has failed (rank 2 (pid ")) << late->Output();
  EXPECT_TRUE(Contains(late->Output(), "disconnected from ohiod without leaving the group); its ranks must leave"))
      << late->Output();
}

TEST(SingleNodeFaults, RankKilledInTheMiddleOfBackToBackCalls) {
  TempDir dir;
  Daemon daemon(dir, {"--timeout-ms", "120000"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  RankJob job(dir, daemon.socket(), "killed-busy", 4,
              {"--bytes", "4096", "--iterations", "100000000", "--expect", "group failed"});
  for (uint32_t r = 0; r < 4; ++r) ASSERT_TRUE(job.rank(r).WaitForOutput("joined", kDeadline)) << job.Outputs();
  std::this_thread::sleep_for(milliseconds(500));
  job.rank(1).Signal(SIGKILL);
  auto codes = job.Wait(seconds(20));
  for (uint32_t r : {0u, 2u, 3u}) {
    EXPECT_EQ(codes[r], 0) << job.Outputs();
    EXPECT_TRUE(Contains(job.rank(r).Output(), "rank 1 (pid")) << job.rank(r).Output();
  }
  EXPECT_TRUE(WaitUntil([&] { return CountOpenFds(daemon.pid(), "memfd:ohio-group") == 0; }, seconds(10)));
  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
}

TEST(SingleNodeFaults, RankThatNeverArrivesTimesOutTheGroup) {
  TempDir dir;
  Daemon daemon(dir, {"--timeout-ms", "1500"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  RankJob job(dir, daemon.socket(), "stalled", 3, {"--bytes", "64", "--expect", "timeout"},
              [](uint32_t r) { return r == 2 ? std::vector<std::string>{"--stall"} : std::vector<std::string>{}; });
  for (uint32_t r = 0; r < 2; ++r) {
    EXPECT_EQ(job.rank(r).Wait(seconds(30)), 0) << job.Outputs();
    EXPECT_TRUE(Contains(job.rank(r).Output(), "rank 2 did not enter the alltoall within 1500 ms"))
        << job.rank(r).Output();
  }
  job.rank(2).Signal(SIGKILL);
  job.Wait(seconds(10));
  ExpectHealthyJob(dir, daemon.socket(), "after-timeout");
  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
}

// A group on one node goes on without its daemon (its ranks meet in the segment alone): a rank
// waiting for one that never comes is told so at the group's timeout, with no grace for a
// daemon that is gone.
TEST(SingleNodeFaults, DaemonKilledThenRestarted) {
  TempDir dir;
  Daemon daemon(dir, {"--timeout-ms", "1500"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  RankJob job(dir, daemon.socket(), "orphaned", 2,
              {"--bytes", "64", "--expect", "timeout"},
              [](uint32_t r) { return r == 1 ? std::vector<std::string>{"--stall"} : std::vector<std::string>{}; });
  for (uint32_t r = 0; r < 2; ++r) ASSERT_TRUE(job.rank(r).WaitForOutput("joined", kDeadline)) << job.Outputs();
  std::this_thread::sleep_for(milliseconds(200));
  daemon.Kill();
  const auto killed = std::chrono::steady_clock::now();
  EXPECT_EQ(job.rank(0).Wait(seconds(20)), 0) << job.Outputs();
  EXPECT_LT(std::chrono::steady_clock::now() - killed, seconds(5)) << "the timeout, not a grace after it";
  EXPECT_TRUE(Contains(job.rank(0).Output(), "the other ranks did not enter the alltoall within 1500 ms"))
      << job.rank(0).Output();
  job.rank(1).Signal(SIGKILL);
  // A new daemon replaces the dead one's stale socket and serves new groups.
  Daemon again(dir);
  ASSERT_TRUE(again.Start()) << again.Log();
  ExpectHealthyJob(dir, again.socket(), "after-restart");
  EXPECT_EQ(again.Stop(), 0) << again.Log();
}

TEST(SingleNodeFaults, SecondDaemonOnTheSameSocketIsRefused) {
  TempDir dir;
  Daemon first(dir);
  ASSERT_TRUE(first.Start()) << first.Log();
  Daemon second(dir, {"--socket", first.socket()}, "second");
  EXPECT_FALSE(second.Start());
  EXPECT_TRUE(Contains(second.Log(), "another ohiod is already listening")) << second.Log();
  ExpectHealthyJob(dir, first.socket(), "first-still-serves");
}

TEST(SingleNodeFaults, SocketPathThatIsARegularFileIsRefusedAndKept) {
  TempDir dir;
  const std::string path = dir.file("not-a-socket");
  const std::string contents = "someone's data\n\x01\x02 kept byte for byte\n";
  std::ofstream(path, std::ios::binary) << contents;
  Daemon daemon(dir, {"--socket", path});
  EXPECT_FALSE(daemon.Start());
  EXPECT_EQ(daemon.Stop(), 1) << daemon.Log();
  EXPECT_TRUE(Contains(daemon.Log(), path + " exists and is not a socket; ohiod replaces only a stale socket there"))
      << daemon.Log();
  std::ifstream in(path, std::ios::binary);
  const std::string after((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(after, contents);
}

TEST(SingleNodeFaults, GroupTooLargeForTheSsb) {
  TempDir dir;
  Daemon daemon(dir, {"--ssb-bytes", "4KiB"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  // 100 ranks on this node: one byte of each of 100 x 100 messages needs 10000 bytes, in each of
  // the two halves a group on one node stages its rounds in (rounded to cache lines: 2 x 10048).
  Process rank(std::vector<std::string>{RunfilePath("tests/tools/alltoall_rank"), "--socket", daemon.socket(),
                                        "--key", KeyHex("too-large"), "--size", "100", "--rank", "0", "--expect",
                                        "not enough shared memory"},
               dir.file("too-large.out"));
  EXPECT_EQ(rank.Wait(kDeadline), 0) << rank.Output();
  EXPECT_TRUE(Contains(rank.Output(), "join error code=5")) << rank.Output();
  EXPECT_TRUE(Contains(rank.Output(), "needs an SSB of at least 20096 bytes (two halves); ohiod is configured with ssb_bytes = 4096"))
      << rank.Output();
  ExpectHealthyJob(dir, daemon.socket(), "small-still-fits");
}

TEST(SingleNodeFaults, GroupsBeyondTheNodeMemoryLimitAreRefused) {
  TempDir dir;
  // One uid may take the whole node here: this is the node's limit, not the user's.
  Daemon daemon(dir, {"--ssb-bytes", "1MiB", "--memory-limit", "3MiB", "--user-memory-percent", "100"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  RankJob holders(dir, daemon.socket(), "holder", 2, {"--stall"});
  RankJob holders2(dir, daemon.socket(), "holder2", 2, {"--stall"});
  for (uint32_t r = 0; r < 2; ++r) {
    ASSERT_TRUE(holders.rank(r).WaitForOutput("joined", kDeadline)) << holders.Outputs();
    ASSERT_TRUE(holders2.rank(r).WaitForOutput("joined", kDeadline)) << holders2.Outputs();
  }
  RankJob refused(dir, daemon.socket(), "refused", 2, {"--bytes", "8", "--expect", "not enough shared memory"});
  auto codes = refused.Wait(kDeadline);
  for (uint32_t r = 0; r < 2; ++r) {
    EXPECT_EQ(codes[r], 0) << refused.Outputs();
    EXPECT_TRUE(Contains(refused.rank(r).Output(), "of memory_limit = 3145728 are in use by 2 groups"))
        << refused.rank(r).Output();
  }
  // Freeing one group makes room again.
  holders.rank(0).Signal(SIGKILL);
  holders.rank(1).Signal(SIGKILL);
  holders.Wait(seconds(10));
  EXPECT_TRUE(WaitUntil([&] { return CountOpenFds(daemon.pid(), "memfd:ohio-group") == 1; }, seconds(10)));
  ExpectHealthyJob(dir, daemon.socket(), "fits-again");
}

TEST(SingleNodeFaults, AnotherUserCannotJoinTheGroup) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  // The rank tool must be executable by the other user: copy it out of Bazel's root-only cache.
  const std::string tool = dir.file("alltoall_rank");
  {
    std::ifstream in(RunfilePath("tests/tools/alltoall_rank"), std::ios::binary);
    std::ofstream out(tool, std::ios::binary);
    out << in.rdbuf();
  }
  ASSERT_EQ(chmod(tool.c_str(), 0755), 0);
  Process owner(std::vector<std::string>{tool, "--socket", daemon.socket(), "--key", KeyHex("owned"), "--size", "2",
                                         "--rank", "0", "--stall"},
                dir.file("owner.out"));
  ASSERT_TRUE(owner.WaitForOutput("joined", kDeadline)) << owner.Output();
  constexpr uid_t kNobody = 65534;
  Process intruder(std::vector<std::string>{tool, "--socket", daemon.socket(), "--key", KeyHex("owned"), "--size",
                                            "2", "--rank", "1", "--expect", "refused"},
                   dir.file("intruder.out"), kNobody);
  EXPECT_EQ(intruder.Wait(kDeadline), 0) << intruder.Output();
  EXPECT_TRUE(Contains(intruder.Output(), "belongs to another user")) << intruder.Output();
}

// --- raw bytes on the control socket ---

int ConnectRaw(const std::string& path) {
  auto connected = ConnectUnix(path);
  if (!connected.ok()) return -1;
  const int fd = connected.value();
  struct timeval tv = {10, 0};  // no read may hang the test
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

void WriteAll(int fd, const std::string& bytes) {
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
}

std::string Frame(const std::string& payload) {
  std::string f(4, '\0');
  for (int i = 0; i < 4; ++i) f[i] = static_cast<char>((payload.size() >> (8 * i)) & 0xff);
  return f + payload;
}

// The daemon's next reply: an Error with the given code, or (code < 0) just a closed socket.
control::Error ReadError(int fd) {
  std::string payload;
  std::vector<int> fds;
  Status s = ReceiveFrame(fd, 1 << 20, &payload, &fds);
  control::DaemonMessage m;
  if (!s.ok() || !m.ParseFromString(payload) || !m.has_error()) {
    control::Error none;
    none.set_code(control::Error::UNKNOWN);
    none.set_message(s.ok() ? "no error in reply" : s.message());
    return none;
  }
  return m.error();
}

bool ClosedByDaemon(int fd) {
  char c;
  return read(fd, &c, 1) == 0;
}

std::string HelloFrame(uint32_t version) {
  control::ClientMessage m;
  m.mutable_hello()->set_protocol_version(version);
  return Frame(m.SerializeAsString());
}

TEST(SingleNodeFaults, GarbageTruncatedAndOversizedControlMessages) {
  TempDir dir;
  Daemon daemon(dir, {"--max-message-bytes", "64KiB"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();

  {  // A frame whose payload is not a control message.
    int fd = ConnectRaw(daemon.socket());
    WriteAll(fd, Frame(std::string("\xff\xfe garbage \x01\x02\x03", 14)));
    control::Error e = ReadError(fd);
    EXPECT_EQ(e.code(), control::Error::BAD_MESSAGE) << e.message();
    EXPECT_TRUE(ClosedByDaemon(fd));
    close(fd);
  }
  {  // Announces 4 GiB.
    int fd = ConnectRaw(daemon.socket());
    WriteAll(fd, std::string("\xff\xff\xff\xff", 4));
    control::Error e = ReadError(fd);
    EXPECT_EQ(e.code(), control::Error::BAD_MESSAGE);
    EXPECT_TRUE(Contains(e.message(), "exceeds the limit of 65536")) << e.message();
    EXPECT_TRUE(ClosedByDaemon(fd));
    close(fd);
  }
  {  // Truncated: announces 100 bytes, sends 10, hangs up.
    int fd = ConnectRaw(daemon.socket());
    WriteAll(fd, Frame(std::string(100, 'x')).substr(0, 14));
    close(fd);
  }
  {  // Pure noise, no framing at all.
    int fd = ConnectRaw(daemon.socket());
    std::string noise;
    for (int i = 0; i < 5000; ++i) noise += static_cast<char>((i * 7919) & 0xff);
    (void)!write(fd, noise.data(), noise.size());
    close(fd);
  }
  {  // Join before Hello.
    int fd = ConnectRaw(daemon.socket());
    control::ClientMessage m;
    m.mutable_join()->set_key(std::string(16, 'k'));
    WriteAll(fd, Frame(m.SerializeAsString()));
    EXPECT_EQ(ReadError(fd).code(), control::Error::STATE);
    close(fd);
  }
  {  // A protocol version from the future.
    int fd = ConnectRaw(daemon.socket());
    WriteAll(fd, HelloFrame(kControlProtocolVersion + 1));
    control::Error e = ReadError(fd);
    EXPECT_EQ(e.code(), control::Error::VERSION);
    EXPECT_TRUE(Contains(e.message(), "speaks control protocol")) << e.message();
    close(fd);
  }
  {  // Well-framed but inconsistent joins are refused and the connection stays usable.
    int fd = ConnectRaw(daemon.socket());
    WriteAll(fd, HelloFrame(kControlProtocolVersion));
    std::string payload;
    std::vector<int> fds;
    ASSERT_TRUE(ReceiveFrame(fd, 1 << 20, &payload, &fds).ok());
    control::ClientMessage m;
    m.mutable_join()->set_key("short");
    WriteAll(fd, Frame(m.SerializeAsString()));
    control::Error e = ReadError(fd);
    EXPECT_EQ(e.code(), control::Error::INVALID_ARGUMENT);
    EXPECT_TRUE(Contains(e.message(), "key must be 16 bytes")) << e.message();
    auto* j = m.mutable_join();
    j->set_key(std::string(16, 'k'));
    j->set_size(4);
    j->set_rank(1);
    j->add_node_names("no-such-node");
    for (int i = 0; i < 4; ++i) j->add_rank_node(0);
    WriteAll(fd, Frame(m.SerializeAsString()));
    e = ReadError(fd);
    EXPECT_EQ(e.code(), control::Error::INVALID_ARGUMENT);
    EXPECT_TRUE(Contains(e.message(), "not among the group's nodes")) << e.message();
    j->set_rank(7);
    WriteAll(fd, Frame(m.SerializeAsString()));
    e = ReadError(fd);
    EXPECT_TRUE(Contains(e.message(), "rank 7 is outside a group of 4")) << e.message();
    close(fd);
  }
  EXPECT_TRUE(daemon.running());
  ExpectHealthyJob(dir, daemon.socket(), "after-garbage");
  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
}

}  // namespace
}  // namespace ohio::testing
