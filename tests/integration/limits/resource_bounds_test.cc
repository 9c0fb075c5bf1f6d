// What hostile clients and hosts can take of ohiod (daemon/control/control_server.cc,
// daemon/transport/tcp/tcp_transport.cc): the memory of control messages announced and never
// finished is bounded per uid and given back; out of descriptors, the daemon rests instead of
// spinning and logging, and serves again once descriptors free up; connections that say no
// hello are closed after hello-timeout-ms, on the control socket and on the data port, and the
// data port caps those still waiting for theirs. Real daemons, real sockets, the flooding user
// an unprivileged uid.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
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
#include "tests/harness/stopped_process.h"
#include "tests/harness/rank_job.h"
#include "tests/harness/raw_tcp.h"

namespace ohio::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kDeadline = seconds(60);
constexpr uid_t kNobody = 65534;
constexpr uint64_t kMiB = 1 << 20;

bool Contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

// A field of /proc/PID/status in bytes (its "kB" values), 0 if absent.
uint64_t StatusBytes(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;
  }
  return 0;
}

// The process's user and system CPU time so far, in seconds.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stoull(f);
    if (i == 15) stime = std::stoull(f);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The start of a log that a failure prints (a spinning daemon's runs to millions of lines).
std::string Head(const std::string& log) { return log.substr(0, 20000); }

size_t Lines(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

// A binary of the build copied into `dir`, where another uid may run it.
std::string CopyForAnyone(const TempDir& dir, const std::string& runfile, const std::string& name) {
  const std::string copy = dir.file(name);
  {
    std::ifstream in(RunfilePath(runfile), std::ios::binary);
    std::ofstream out(copy, std::ios::binary);
    out << in.rdbuf();
  }
  chmod(copy.c_str(), 0755);
  chmod(dir.path().c_str(), 0755);
  return copy;
}

TEST(ResourceBounds, UnfinishedMessagesOfOneUidAreBoundedAndGivenBack) {
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer's allocator holds freed memory in its quarantine (256 MiB) and gives
  // little back to the kernel: the daemon's RSS says nothing of its own bounds under it. The
  // default build runs this test.
  GTEST_SKIP() << "RSS bounds are not measurable under AddressSanitizer's allocator";
#endif
  TempDir dir;
  // peer-hosts = *: a group may span any number of nodes, so a join may be as long as
  // max-message-bytes and the flood's 4 MiB messages are read, not refused from their length;
  // the frame deadline long, so the flood holds them as long as it likes.
  Daemon daemon(dir, {"--user-max-pending-bytes", "32MiB", "--max-pending-bytes", "64MiB", "--peer-hosts", "*",
                      "--control-frame-timeout-ms", "600000"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  {
    RankJob warm_up(dir, daemon.socket(), "warm-up", 2, {"--bytes", "4096", "--iterations", "20"});
    for (int code : warm_up.Wait(kDeadline)) ASSERT_EQ(code, 0) << warm_up.Outputs() << daemon.Log();
  }
  const uint64_t baseline = StatusBytes(daemon.pid(), "RssAnon");
  ASSERT_GT(baseline, 0u);

  // The daemon's anonymous memory, sampled until the flood is over.
  std::atomic<bool> sampling{true};
  std::atomic<uint64_t> peak{baseline};
  std::thread sampler([&] {
    while (sampling) {
      peak = std::max<uint64_t>(peak, StatusBytes(daemon.pid(), "RssAnon"));
      std::this_thread::sleep_for(milliseconds(10));
    }
  });
  // Nobody opens 1,000 connections, says hello on each and sends 4 MiB - 1 of a 4 MiB message.
  Process flood({CopyForAnyone(dir, "tests/tools/control_flood", "control_flood"), "--socket", daemon.socket(),
                 "--connections", "1000", "--hello", "--announce", std::to_string(4 * kMiB), "--send",
                 std::to_string(4 * kMiB - 1), "--hold-ms", "60000"},
                dir.file("flood.out"), kNobody);
  const bool flooded = flood.WaitForOutput("flooded: 1000 connections", kDeadline);
  // Meanwhile root's job is served, its bytes verified by the rank tool.
  RankJob job(dir, daemon.socket(), "root-job", 2, {"--bytes", "4096", "--iterations", "50"});
  for (int code : job.Wait(kDeadline)) EXPECT_EQ(code, 0) << job.Outputs() << daemon.Log();
  sampling = false;
  sampler.join();
  ASSERT_TRUE(flooded) << flood.Output() << daemon.Log();
  // 32 MiB of the uid's bound, and a margin for what the daemon allocates besides.
  EXPECT_LT(peak.load(), baseline + 32 * kMiB + 48 * kMiB)
      << "baseline " << baseline << ", peak " << peak.load() << "\n" << flood.Output();
  // All but the few that fit were cut off, and the daemon said why (a few lines, not 1,000).
  EXPECT_TRUE(Contains(flood.Output(), "sent every byte")) << flood.Output();
  EXPECT_TRUE(Contains(daemon.Log(), "(uid 65534): uid 65534 would hold ")) << daemon.Log();
  EXPECT_TRUE(Contains(daemon.Log(), "bytes of ohiod's memory for unfinished messages; user-max-pending-bytes = "
                                     "33554432; disconnecting"))
      << daemon.Log();
  EXPECT_LT(Lines(daemon.Log()), 200u);

  // The flood ends: its memory goes back to the system.
  flood.Signal(SIGKILL);
  flood.Wait(seconds(10));
  const auto end = Clock::now() + seconds(20);
  uint64_t now = StatusBytes(daemon.pid(), "RssAnon");
  while (now > baseline + 8 * kMiB && Clock::now() < end) {
    std::this_thread::sleep_for(milliseconds(50));
    now = StatusBytes(daemon.pid(), "RssAnon");
  }
  EXPECT_LE(now, baseline + 8 * kMiB) << "baseline " << baseline << ", after the flood " << now;
}

TEST(ResourceBounds, OutOfDescriptorsTheDaemonRestsInsteadOfSpinning) {
  RaiseDescriptorLimit();
  TempDir dir;
  Daemon daemon(dir, {"--hello-timeout-ms", "4000"});
  {
    // The daemon inherits a limit of 256 descriptors; this process gets its own back at once.
    struct rlimit mine;
    getrlimit(RLIMIT_NOFILE, &mine);
    struct rlimit low = {256, mine.rlim_max};
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
    daemon.Launch();
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &mine), 0);
  }
  ASSERT_TRUE(daemon.AwaitUp()) << daemon.Log();
  const size_t lines_before = Lines(daemon.Log());
  const double cpu_before = CpuSeconds(daemon.pid());

  // 600 idle connections, more than the daemon can hold: those past its limit are closed.
  std::vector<int> flood;
  const auto flood_start = Clock::now();
  for (int i = 0; i < 600; ++i) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    auto addr = UnixAddress(daemon.socket());
    ASSERT_TRUE(addr.ok());
    if (connect(fd, reinterpret_cast<const sockaddr*>(&addr.value()), sizeof(sockaddr_un)) != 0) {
      close(fd);  // the listen queue is full: refused outright, as it should be
      continue;
    }
    flood.push_back(fd);
  }
  ASSERT_GT(flood.size(), 300u);
  std::this_thread::sleep_for(seconds(3));
  const double cpu = CpuSeconds(daemon.pid()) - cpu_before;
  const size_t lines = Lines(daemon.Log()) - lines_before;
  EXPECT_LT(cpu, 0.5) << Head(daemon.Log());
  EXPECT_LT(lines, 40u) << Head(daemon.Log());
  EXPECT_TRUE(Contains(daemon.Log(), "control socket: accept: Too many open files; closed ")) << Head(daemon.Log());
  // Those past the limit were closed, not left hanging.
  const auto closed_at = WhenClosedByPeer(flood, milliseconds(500));
  EXPECT_GT(std::count_if(closed_at.begin(), closed_at.end(), [](auto t) { return t != Clock::time_point{}; }), 100);

  // The flood holds its sockets; past hello-timeout-ms the daemon has closed its side, so its
  // descriptors are free again and a job is served.
  std::this_thread::sleep_until(flood_start + milliseconds(4500));
  RankJob job(dir, daemon.socket(), "after-flood", 2, {"--bytes", "1024", "--iterations", "20"});
  for (int code : job.Wait(kDeadline)) EXPECT_EQ(code, 0) << job.Outputs() << Head(daemon.Log());
  // Hundreds were disconnected for it; a few lines say so (the rest are counted in a summary).
  const std::string log = daemon.Log();
  size_t hello_lines = 0;
  for (size_t at = 0; (at = log.find("no hello within hello-timeout-ms = 4000; disconnecting", at)) != std::string::npos;
       ++at) {
    ++hello_lines;
  }
  EXPECT_GE(hello_lines, 1u) << Head(log);
  EXPECT_LE(hello_lines, 5u) << Head(log);
  for (int fd : flood) close(fd);
}

// Connects to the control socket; on `hello`, says hello and reads the reply.
int ControlClient(const std::string& socket, bool hello) {
  auto fd = ConnectUnix(socket);
  if (!fd.ok()) return -1;
  if (hello) {
    control::ClientMessage m;
    m.mutable_hello()->set_protocol_version(kControlProtocolVersion);
    std::string reply;
    std::vector<int> fds;
    if (!SendFrame(fd.value(), m.SerializeAsString()).ok() ||
        !ReceiveFrame(fd.value(), 1 << 20, &reply, &fds).ok()) {
      close(fd.value());
      return -1;
    }
  }
  return fd.value();
}

TEST(ResourceBounds, ControlClientsThatSayNoHelloAreDisconnected) {
  TempDir dir;
  Daemon daemon(dir, {"--hello-timeout-ms", "1000"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const int silent = ControlClient(daemon.socket(), false);
  const int greeted = ControlClient(daemon.socket(), true);
  ASSERT_GE(silent, 0);
  ASSERT_GE(greeted, 0);
  const auto start = Clock::now();
  // The silent one is told why, then closed, after the timeout and not long after.
  std::string error;
  std::vector<int> fds;
  ASSERT_TRUE(ReceiveFrame(silent, 1 << 20, &error, &fds).ok());
  const auto waited = Clock::now() - start;
  control::DaemonMessage m;
  ASSERT_TRUE(m.ParseFromString(error));
  EXPECT_EQ(m.error().message(), "no Hello within hello-timeout-ms = 1000");
  EXPECT_GE(waited, milliseconds(800));
  EXPECT_LT(waited, seconds(5));
  EXPECT_TRUE(ClosedByPeer(silent, seconds(5)));
  // The one that said hello stays.
  EXPECT_FALSE(ClosedByPeer(greeted, milliseconds(500)));
  close(silent);
  close(greeted);
}

// A hello sent in time to a daemon that was stopped then (SIGSTOP) and continued after the
// hello timeout counts: the client is answered, not refused as silent.
TEST(ResourceBounds, AHelloSentWhileTheDaemonWasStoppedCounts) {
  TempDir dir;
  Daemon daemon(dir, {"--hello-timeout-ms", "1000"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  for (int attempt = 0; attempt < 3; ++attempt) {
    SCOPED_TRACE("attempt " + std::to_string(attempt));
    const int client = ControlClient(daemon.socket(), false);
    ASSERT_GE(client, 0);
    std::this_thread::sleep_for(milliseconds(300));  // accepted, its hello clock running
    {
      StoppedForScope stopped(daemon.pid());
      ASSERT_TRUE(stopped.stopped());
      control::ClientMessage hello;
      hello.mutable_hello()->set_protocol_version(kControlProtocolVersion);
      ASSERT_TRUE(SendFrame(client, hello.SerializeAsString()).ok());
      std::this_thread::sleep_for(milliseconds(2000));
    }
    std::string reply;
    std::vector<int> fds;
    ASSERT_TRUE(ReceiveFrame(client, 1 << 20, &reply, &fds).ok());
    control::DaemonMessage m;
    ASSERT_TRUE(m.ParseFromString(reply));
    EXPECT_TRUE(m.has_hello()) << m.DebugString();
    EXPECT_FALSE(ClosedByPeer(client, milliseconds(500)));
    close(client);
  }
}

// A TCP connection to 127.0.0.1:port from the loopback address `source` (127.0.0.x), so that
// a test can be several hosts.
TEST(ResourceBounds, DataPortClosesConnectionsWithoutHelloAndCapsThem) {
  TempDir dir;
  Cluster cluster(dir, 2,
                  {"--transport", "tcp", "--hello-timeout-ms", "3000", "--max-unauthenticated-data-connections", "8"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const int port = cluster.data_port(1);  // n0 dials n1: n1 accepts the real peer

  // Eight idle connections from one host: half the cap (4) are let wait for their hello, the
  // others closed as they come.
  std::vector<int> idle;
  const auto start = Clock::now();
  for (int i = 0; i < 8; ++i) {
    const int fd = ConnectFrom("127.0.0.2", port);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    idle.push_back(fd);
  }
  std::vector<Clock::time_point> closed_at(idle.size());
  std::thread watcher([&] { closed_at = WhenClosedByPeer(idle, seconds(10)); });
  // Meanwhile a real peer connects: a job across both nodes.
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 1), "across",
              {"--bytes", "1024", "--iterations", "20"});
  for (int code : job.Wait(kDeadline)) EXPECT_EQ(code, 0) << job.Outputs() << cluster.Logs();
  watcher.join();
  size_t refused = 0, timed_out = 0;
  for (const auto& t : closed_at) {
    ASSERT_NE(t, Clock::time_point{}) << "a connection without hello was never closed\n" << cluster.Logs();
    const auto after = t - start;
    if (after < milliseconds(2000)) ++refused;
    if (after >= milliseconds(2800) && after < milliseconds(8000)) ++timed_out;
  }
  EXPECT_EQ(refused, 4u) << cluster.Logs();
  EXPECT_EQ(timed_out, 4u) << cluster.Logs();
  const std::string log = cluster.node(1).Log();
  EXPECT_TRUE(Contains(log, "data port: refused a connection from 127.0.0.2:")) << log;
  EXPECT_TRUE(Contains(log, "127.0.0.2 has 4 connections that have not said hello yet, half of "
                            "max-unauthenticated-data-connections = 8"))
      << log;
  EXPECT_TRUE(Contains(log, "no hello within hello-timeout-ms = 3000")) << log;
  for (int fd : idle) close(fd);

  // Two hosts' waiting connections, 8 in all: any host past them is refused (the fifth
  // refusal line in 10 s, still under the rate limit).
  std::vector<int> waiting;
  for (const char* host : {"127.0.0.3", "127.0.0.3", "127.0.0.3", "127.0.0.3", "127.0.0.4", "127.0.0.4",
                           "127.0.0.4", "127.0.0.4"}) {
    waiting.push_back(ConnectFrom(host, port));
    ASSERT_GE(waiting.back(), 0);
  }
  EXPECT_FALSE(ClosedByPeer(waiting.back(), milliseconds(300)));
  const int ninth = ConnectFrom("127.0.0.5", port);
  ASSERT_GE(ninth, 0);
  EXPECT_TRUE(ClosedByPeer(ninth, seconds(2)));
  EXPECT_TRUE(Contains(cluster.node(1).Log(),
                       "8 connections have not said hello yet; max-unauthenticated-data-connections = 8"))
      << cluster.node(1).Log();
  close(ninth);
  for (int fd : waiting) close(fd);
}

}  // namespace
}  // namespace ohio::testing
