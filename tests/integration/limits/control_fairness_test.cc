// One user cannot take the control thread from the others (daemon/control/control_server.h):
// joins longer than any this daemon could admit are refused from their length, and the thread
// serves uids in turn, so a uid flooding it from 16 connections leaves another's hello answered
// at once and its job as fast as alone; refused connections are counted and logged a few at a
// time; a message started and not finished is cut off by control-frame-timeout-ms. Real
// daemons, real sockets and rank processes, the flooding user an unprivileged uid.
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/framed_socket.h"
#include "common/little_endian.h"
#include "common/unix_socket.h"
#include "common/version.h"
#include "proto/control.pb.h"
#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/rank_job.h"

namespace ohio::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kDeadline = seconds(60);
constexpr uid_t kNobody = 65534;

bool Contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

std::string Head(const std::string& log) { return log.substr(0, 20000); }

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// A connection that said hello and was answered (-1 if not, within 10 s).
int Greeted(const std::string& socket) {
  auto fd = ConnectUnix(socket);
  if (!fd.ok()) return -1;
  control::ClientMessage hello;
  hello.mutable_hello()->set_protocol_version(kControlProtocolVersion);
  std::string reply;
  std::vector<int> fds;
  const Deadline deadline = Clock::now() + seconds(10);
  if (!SendFrame(fd.value(), hello.SerializeAsString(), {}, deadline).ok() ||
      !ReceiveFrame(fd.value(), 1 << 20, &reply, &fds, deadline).ok()) {
    close(fd.value());
    return -1;
  }
  return fd.value();
}

// How long a hello on a new connection takes to be answered (connect included); a minute if
// it is not.
Clock::duration HelloTime(const std::string& socket) {
  const auto start = Clock::now();
  auto fd = ConnectUnix(socket);
  if (!fd.ok()) return seconds(60);
  control::ClientMessage m;
  m.mutable_hello()->set_protocol_version(kControlProtocolVersion);
  std::string reply;
  std::vector<int> fds;
  const Deadline deadline = start + seconds(10);
  const bool answered = SendFrame(fd.value(), m.SerializeAsString(), {}, deadline).ok() &&
                        ReceiveFrame(fd.value(), 1 << 20, &reply, &fds, deadline).ok();
  const auto took = Clock::now() - start;
  close(fd.value());
  control::DaemonMessage answer;
  return answered && answer.ParseFromString(reply) && answer.has_hello() ? took : seconds(60);
}

// The slowest of `n` hellos, one after another.
Clock::duration SlowestHello(const std::string& socket, int n) {
  Clock::duration slowest{};
  for (int i = 0; i < n; ++i) slowest = std::max(slowest, HelloTime(socket));
  return slowest;
}

// A 2-rank job of root's on `socket`, its bytes checked by the rank tool: how long it took.
Clock::duration JobTime(const TempDir& dir, const std::string& socket, const std::string& name) {
  const auto start = Clock::now();
  RankJob job(dir, socket, name, 2, {"--bytes", "4096", "--iterations", "50"});
  for (int code : job.Wait(kDeadline)) EXPECT_EQ(code, 0) << job.Outputs();
  return Clock::now() - start;
}

// One uid floods oversized joins from 16 connections; another's hello and job go on as alone.
// Run with the default settings, where a join for a million ranks is refused from its length,
// and with peer-hosts = *, where a group could span a million nodes and such a join is read
// whole (1 MiB) and refused by the registry before anything its size is built.
void FloodedJoinsLeaveOthersServed(const std::vector<std::string>& flags, const std::string& counter_that_grows) {
  TempDir dir;
  std::vector<std::string> all = {"--node-name", "n0"};
  all.insert(all.end(), flags.begin(), flags.end());
  Daemon daemon(dir, all);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  // Alone: the warm-up's first job pays for what a first job pays for.
  JobTime(dir, daemon.socket(), "warm-up");
  const auto job_alone = JobTime(dir, daemon.socket(), "alone");
  const auto hello_alone = SlowestHello(daemon.socket(), 10);

  Process flood({ToolAnyoneCanRun(dir, "tests/tools/control_join_flood"), "--socket", daemon.socket(), "--node", "n0",
                 "--connections", "16", "--ranks", "1048576", "--duration-ms", "20000"},
                dir.file("join-flood.out"), kNobody);
  ASSERT_TRUE(flood.WaitForOutput("started", kDeadline)) << flood.Output();
  std::this_thread::sleep_for(milliseconds(500));  // the flood in full swing
  const auto hello_flooded = SlowestHello(daemon.socket(), 20);
  const auto job_flooded = JobTime(dir, daemon.socket(), "flooded");
  const admin::CountersReply counters = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(flood.Wait(kDeadline), 0) << flood.Output();

  // Before: 7.6 s for a hello, 23.9 s for the job (0.1 s alone).
  EXPECT_LE(hello_flooded, milliseconds(100))
      << "slowest hello " << Ms(hello_flooded) << " ms flooded, " << Ms(hello_alone) << " ms alone";
  // Twice its time alone, or 2 s on a box so loaded that a job alone takes next to nothing.
  EXPECT_LE(job_flooded, std::max<Clock::duration>(2 * job_alone, seconds(2)))
      << "job " << Ms(job_flooded) << " ms flooded, " << Ms(job_alone) << " ms alone";
  // The flood did flood: its joins were answered with refusals or cut off by length.
  std::smatch m;
  const std::string out = flood.Output();
  ASSERT_TRUE(std::regex_search(out, m, std::regex("join flood: ([0-9]+) joins sent, ([0-9]+) refused"))) << out;
  EXPECT_GT(std::stoull(m[1]), 100u) << out;
  const auto& cs = counters.control_socket();
  if (counter_that_grows == "oversized") {
    EXPECT_GT(cs.refused_control_oversized_frames(), 100u) << counters.DebugString();
    EXPECT_TRUE(Contains(daemon.Log(), "bytes is longer than any request ohiod could admit")) << Head(daemon.Log());
  } else {
    EXPECT_EQ(cs.refused_control_oversized_frames(), 0u) << counters.DebugString();
    EXPECT_GT(std::stoull(m[2]), 10u) << out;
    EXPECT_TRUE(Contains(daemon.Log(), "needs an SSB of at least")) << Head(daemon.Log());
  }
  // A few lines of each kind, the rest counted.
  EXPECT_LT(daemon.Log().size(), 64u << 10) << Head(daemon.Log());
  std::printf("hello: slowest %.1f ms alone, %.1f ms flooded; job: %.0f ms alone, %.0f ms flooded; %s\n",
              Ms(hello_alone), Ms(hello_flooded), Ms(job_alone), Ms(job_flooded), m[0].str().c_str());
}

TEST(ControlFairness, OversizedJoinsOfOneUidAreRefusedByLengthAndStarveNoOne) {
  FloodedJoinsLeaveOthersServed({}, "oversized");
}

TEST(ControlFairness, JoinsTheRegistryRefusesCostLittleAndStarveNoOne) {
  FloodedJoinsLeaveOthersServed({"--peer-hosts", "*"}, "refused by the registry");
}

// The metrics file's sample of `name` with `labels`, or -1 if it has none.
long long MetricsSample(const std::string& file, const std::string& sample) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(sample + " ", 0) == 0) return std::stoll(line.substr(sample.size() + 1));
  }
  return -1;
}

TEST(ControlFairness, RefusedConnectionsAreCountedAndLoggedAFewAtATime) {
  TempDir dir;
  const std::string metrics = dir.file("ohiod.prom");
  // The frame deadline long: the fourth client holds an unfinished message throughout.
  Daemon daemon(dir, {"--max-clients", "4", "--user-max-clients", "3", "--control-frame-timeout-ms", "600000",
                      "--metrics-file", metrics, "--metrics-interval-s", "1"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  // Root holds 3 connections, greeted (hello-timeout-ms does not close them): its
  // user-max-clients.
  std::vector<int> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(Greeted(daemon.socket()));
    ASSERT_GE(held.back(), 0);
  }
  // A connection of root's past them is refused and told why.
  const auto connect_refused = [&](const std::string& why) {
    auto fd = ConnectUnix(daemon.socket());
    if (!fd.ok()) return false;
    std::string reply;
    std::vector<int> fds;
    const bool told = ReceiveFrame(fd.value(), 1 << 20, &reply, &fds, Clock::now() + seconds(10)).ok();
    close(fd.value());
    control::DaemonMessage m;
    return told && m.ParseFromString(reply) && Contains(m.error().message(), why);
  };
  ASSERT_TRUE(connect_refused("uid 0 already has 3 connections to ohiod; user-max-clients = 3"));
  // Nobody takes the fourth (a hello, then a message it never finishes); now every connection
  // is past max-clients.
  Process other({ToolAnyoneCanRun(dir, "tests/tools/control_flood"), "--socket", daemon.socket(), "--connections", "1",
                 "--hello", "--announce", "100", "--send", "10", "--hold-ms", "60000"},
                dir.file("other.out"), kNobody);
  ASSERT_TRUE(other.WaitForOutput("flooded: 1 connections, 1 sent every byte", kDeadline)) << other.Output();
  ASSERT_TRUE(connect_refused("ohiod serves at most 4 clients (max-clients)"));

  // About 10 s of refused connections, as fast as this process can make them.
  const size_t log_before = daemon.Log().size();
  const auto start = Clock::now();
  uint64_t refused = 0;
  for (int i = 0; i < 10000000 && Clock::now() - start < seconds(10); ++i) {
    auto fd = ConnectUnix(daemon.socket());
    if (!fd.ok()) continue;  // the listen queue full: refused by the kernel
    char buf[256];
    // Told and closed: read until the daemon's end of file, 1 s at most.
    struct timeval tv = {1, 0};
    setsockopt(fd.value(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    while (read(fd.value(), buf, sizeof(buf)) > 0) {
    }
    close(fd.value());
    ++refused;
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const size_t grew = daemon.Log().size() - log_before;
  // Before refusals were logged at a bounded rate, this flood grew the log by megabytes a
  // second (docs/SECURITY.md).
  EXPECT_LE(static_cast<double>(grew) / elapsed, 10240.0) << grew << " bytes in " << elapsed << " s\n"
                                                          << Head(daemon.Log());
  EXPECT_GT(refused, 1000u);
  std::printf("%llu connections refused in %.1f s; the log grew by %zu bytes (%.0f B/s)\n",
              static_cast<unsigned long long>(refused), elapsed, grew, static_cast<double>(grew) / elapsed);
  const admin::CountersReply counters = QueryCounters(daemon.admin_socket());
  const auto& cs = counters.control_socket();
  // Every refusal counted: the two told above and the flood's.
  EXPECT_EQ(cs.refused_control_max_clients(), refused + 1) << counters.DebugString();
  EXPECT_EQ(cs.refused_control_user_max_clients(), 1u) << counters.DebugString();
  EXPECT_TRUE(Contains(daemon.Log(), "refusing client pid ")) << Head(daemon.Log());
  EXPECT_TRUE(Contains(daemon.Log(), "similar messages suppressed")) << Head(daemon.Log());
  // And the metrics file says so, within a few of its intervals.
  const std::string sample = "ohio_control_socket_refusals_total{reason=\"max_clients\"}";
  const auto until = Clock::now() + seconds(10);
  while (MetricsSample(metrics, sample) < static_cast<long long>(refused + 1) && Clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_EQ(MetricsSample(metrics, sample), static_cast<long long>(refused + 1));
  EXPECT_EQ(MetricsSample(metrics, "ohio_control_socket_refusals_total{reason=\"user_max_clients\"}"), 1);
  for (int fd : held) close(fd);
}

TEST(ControlFairness, AMessageStartedAndNotFinishedIsCutOffByTheFrameDeadline) {
  TempDir dir;
  Daemon daemon(dir, {"--control-frame-timeout-ms", "1000"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const int fd = Greeted(daemon.socket());
  ASSERT_GE(fd, 0);
  // A message of 100 bytes, 10 of them sent: then nothing.
  std::string partial(4, '\0');
  PutLittleEndian(partial.data(), uint32_t{100});
  partial.append(10, 'x');
  ASSERT_EQ(send(fd, partial.data(), partial.size(), MSG_NOSIGNAL), static_cast<ssize_t>(partial.size()));
  const auto start = Clock::now();
  // What it holds in ohiod meanwhile is shown (ohioctl counters, the metrics).
  uint64_t pending = 0;
  while (pending == 0 && Clock::now() - start < milliseconds(800)) {
    pending = QueryCounters(daemon.admin_socket()).control_socket().pending_bytes();
  }
  EXPECT_GE(pending, 10u) << "the unfinished message's bytes are not shown as held";
  std::string reply;
  std::vector<int> fds;
  ASSERT_TRUE(ReceiveFrame(fd, 1 << 20, &reply, &fds, start + seconds(30)).ok());
  const auto waited = Clock::now() - start;
  control::DaemonMessage m;
  ASSERT_TRUE(m.ParseFromString(reply));
  EXPECT_EQ(m.error().code(), control::Error::STATE);
  EXPECT_EQ(m.error().message(),
            "a message of 100 bytes, 10 of them sent, was not finished within control-frame-timeout-ms = 1000");
  // Before: held 30-40 s.
  EXPECT_GE(waited, milliseconds(900));
  EXPECT_LT(waited, seconds(5)) << Ms(waited) << " ms";
  char c;
  EXPECT_EQ(read(fd, &c, 1), 0);  // and closed
  close(fd);
  EXPECT_EQ(QueryCounters(daemon.admin_socket()).control_socket().refused_control_frame_timeouts(), 1u);
  EXPECT_EQ(QueryCounters(daemon.admin_socket()).control_socket().pending_bytes(), 0u);
  EXPECT_TRUE(Contains(daemon.Log(), "was not finished within control-frame-timeout-ms = 1000; disconnecting"))
      << daemon.Log();

  // A message sent in pieces that ends within the deadline is served.
  auto slow = ConnectUnix(daemon.socket());
  ASSERT_TRUE(slow.ok());
  std::string frame(4, '\0');
  control::ClientMessage hello;
  hello.mutable_hello()->set_protocol_version(kControlProtocolVersion);
  const std::string payload = hello.SerializeAsString();
  PutLittleEndian(frame.data(), static_cast<uint32_t>(payload.size()));
  frame += payload;
  ASSERT_EQ(send(slow.value(), frame.data(), 3, MSG_NOSIGNAL), 3);
  std::this_thread::sleep_for(milliseconds(500));
  ASSERT_EQ(send(slow.value(), frame.data() + 3, frame.size() - 3, MSG_NOSIGNAL),
            static_cast<ssize_t>(frame.size() - 3));
  ASSERT_TRUE(ReceiveFrame(slow.value(), 1 << 20, &reply, &fds, Clock::now() + seconds(10)).ok());
  ASSERT_TRUE(m.ParseFromString(reply));
  EXPECT_TRUE(m.has_hello()) << m.DebugString();
  close(slow.value());

  // Half a length header is a message started too.
  const int halting = Greeted(daemon.socket());
  ASSERT_GE(halting, 0);
  ASSERT_EQ(send(halting, frame.data(), 2, MSG_NOSIGNAL), 2);
  ASSERT_TRUE(ReceiveFrame(halting, 1 << 20, &reply, &fds, Clock::now() + seconds(30)).ok());
  ASSERT_TRUE(m.ParseFromString(reply));
  EXPECT_EQ(m.error().message(),
            "a message's length, 2 of its 4 bytes sent, was not finished within control-frame-timeout-ms = 1000");
  close(halting);
  EXPECT_EQ(QueryCounters(daemon.admin_socket()).control_socket().refused_control_frame_timeouts(), 2u);
}

}  // namespace
}  // namespace ohio::testing
