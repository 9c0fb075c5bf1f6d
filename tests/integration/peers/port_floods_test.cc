// Hostile hosts at the data port and the peer port (daemon/transport/tcp, daemon/peers/
// peer_port_gate.h): floods of refused connections leave the daemon's log small (rate-limited
// lines, "N similar messages suppressed") while every refusal is counted where ohioctl and the
// metrics show it; thousands of idle connections to the peer port are capped and closed, so the
// daemon's descriptors stay bounded and the cluster's own peers still get in; a frame begun and
// left unfinished on the data port is cut at data-frame-timeout-ms. Real daemons and munged;
// every connection goes to 127.0.0.1 (from other loopback addresses), every flood is bounded in
// count and time.
#include <dirent.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "common/little_endian.h"
#include "common/version.h"
#include "daemon/peers/peer_auth.h"
#include "proto/peer.grpc.pb.h"
#include "tests/harness/cluster.h"
#include "tests/harness/munged.h"
#include "tests/harness/rank_job.h"
#include "tests/harness/raw_tcp.h"
#include "tests/unit/prometheus_text.h"

namespace ohio::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kDeadline = seconds(60);
// How fast the daemon's log may grow under a flood.
constexpr double kMaxLogBytesPerSecond = 10 * 1024;
constexpr auto kFloodTime = seconds(10);

bool Contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

// Whether the log says how many refused credentials it left out: either on the next refusal it
// logs once the window with left-out lines is over ("... (N similar messages suppressed)"), when
// the flood goes on past it, or in a line of its own once the window is over with none logged
// since (peer_auth.cc LogSuppressed), when the flood ended first. Which of the two a run gets
// depends on where the flood ends against the 10 s window.
bool RefusalsSummarised(const std::string& log) {
  static const std::regex kOnTheNextRefusal(R"(refused (data connection|peer call) [^\n]*\(\d+ similar messages suppressed\))");
  return Contains(log, "similar messages suppressed (credentials refused)") || std::regex_search(log, kOnTheNextRefusal);
}

// The summary of the credentials refused and not logged comes once the first suppressed line's
// 10 s window has passed, and a fast flood can be over before that: waits for it (15 s at most).
void AwaitRefusalSummary(const Daemon& daemon) {
  const auto by = Clock::now() + seconds(15);
  while (!RefusalsSummarised(daemon.Log()) && Clock::now() < by) {
    std::this_thread::sleep_for(milliseconds(100));
  }
}

std::vector<std::string> MungeFlags(const Munged& m) { return {"--auth", "munge", "--munge-socket", m.socket()}; }

// The tcp transport's frame header (daemon/transport/tcp/tcp_frame.h): type word ("OH" in the
// high half), immediate, region key, offset, length; and a payload.
std::string Frame(uint32_t type, uint64_t key, uint64_t bytes, const std::string& payload) {
  char h[32];
  PutLittleEndian<uint32_t>(h, 0x4f480000u | type);
  PutLittleEndian<uint32_t>(h + 4, 0);
  PutLittleEndian<uint64_t>(h + 8, key);
  PutLittleEndian<uint64_t>(h + 16, 0);
  PutLittleEndian<uint64_t>(h + 24, bytes);
  return std::string(h, sizeof(h)) + payload;
}
constexpr uint32_t kHelloFrame = 1;
constexpr uint32_t kPutFrame = 2;

bool SendAll(int fd, const std::string& bytes) {
  return send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

// Connects from `source`, sends `bytes`, and waits (up to 3 s) for the daemon to close.
bool RefusedAfterSending(const std::string& source, int port, const std::string& bytes) {
  const int fd = ConnectFrom(source, port);
  if (fd < 0) return false;
  const bool closed = SendAll(fd, bytes) && ClosedByPeer(fd, seconds(3));
  close(fd);
  return closed;
}

// The metrics as `ohioctl metrics` prints them.
PromText CtlMetrics(const TempDir& dir, const std::string& admin_socket) {
  static int n = 0;
  const std::string out = dir.file("metrics" + std::to_string(++n) + ".txt");
  Process p({RunfilePath("client/ohioctl"), "--socket", admin_socket, "metrics"}, out);
  EXPECT_EQ(p.Wait(seconds(30)), 0) << p.Output();
  return ParsePrometheusText(p.Output());
}

double Refused(const PromText& m, const std::string& port, const std::string& reason) {
  return m.Value("ohio_connection_refusals_total", {{"port", port}, {"reason", reason}});
}

double AuthRefused(const PromText& m, const std::string& channel) {
  double n = 0;
  for (const char* reason : {"missing", "malformed", "foreign", "expired", "replayed", "wrong_uid", "wrong_purpose",
                             "munged_error"}) {
    n += m.Value("ohio_peer_auth_refusals_total", {{"channel", channel}, {"reason", reason}});
  }
  return n;
}

size_t OpenDescriptors(pid_t pid) {
  size_t n = 0;
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (d == nullptr) return 0;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n - 2;  // . and ..
}

// A job across both nodes of `cluster`, verified by its ranks.
void ExpectJobRuns(const TempDir& dir, Cluster& cluster, const std::string& name) {
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 1), name,
              {"--bytes", "4096", "--iterations", "10"});
  for (int code : job.Wait(kDeadline)) EXPECT_EQ(code, 0) << job.Outputs() << cluster.Logs();
}

class PortFloods : public ::testing::Test {
 protected:
  void SetUp() override {
    RaiseDescriptorLimit();
    ASSERT_TRUE(munged_.Start()) << munged_.Log();
  }

  TempDir dir_;
  Munged munged_{dir_, "cluster"};
};

TEST_F(PortFloods, DataPortFloodKeepsTheLogSmallAndCountsEveryRefusal) {
  std::vector<std::string> flags = MungeFlags(munged_);
  for (const char* f : {"--transport", "tcp", "--hello-timeout-ms", "2000"}) flags.push_back(f);
  Cluster cluster(dir_, 2, flags);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const int port = cluster.data_port(1);
  const size_t log_before = cluster.node(1).Log().size();
  const auto start = Clock::now();

  // Three kinds in turn, each connection waiting for its close: a hello whose credential is no
  // credential, a hello of an impossible length, a put before any hello.
  const std::string bad_credential = Frame(kHelloFrame, 0, 13, std::string("n0\0not-munge", 13));
  const std::string malformed = Frame(kHelloFrame, 0, 1 << 20, "");
  const std::string put_first = Frame(kPutFrame, 1, 8, "12345678");
  uint64_t sent[3] = {0, 0, 0};
  uint64_t not_closed = 0;
  for (uint64_t i = 0; i < 30000 && Clock::now() - start < kFloodTime; ++i) {
    const std::string& bytes = i % 3 == 0 ? bad_credential : i % 3 == 1 ? malformed : put_first;
    ++sent[i % 3];
    if (!RefusedAfterSending("127.0.0.2", port, bytes)) ++not_closed;
  }
  EXPECT_EQ(not_closed, 0u);

  // Idle connections from one host past its half of the cap (128 / 2): refused at once; those
  // let in closed at the hello timeout.
  std::vector<int> idle;
  for (int i = 0; i < 100; ++i) {
    idle.push_back(ConnectFrom("127.0.0.3", port));
    ASSERT_GE(idle.back(), 0) << std::strerror(errno);
  }
  for (const auto& t : WhenClosedByPeer(idle, seconds(20))) EXPECT_NE(t, Clock::time_point{});
  for (int fd : idle) close(fd);
  ExpectJobRuns(dir_, cluster, "after-data-flood");
  AwaitRefusalSummary(cluster.node(1));
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const std::string log = cluster.node(1).Log();
  const double grew = static_cast<double>(log.size() - log_before);
  std::printf("data port: %llu connections in %.1f s; the log grew %.0f B (%.0f B/s)\n",
              static_cast<unsigned long long>(sent[0] + sent[1] + sent[2] + idle.size()), elapsed, grew, grew / elapsed);
  EXPECT_LE(grew / elapsed, kMaxLogBytesPerSecond) << log.substr(log_before, 20000);
  EXPECT_GT(sent[0], 100u) << "the flood was too slow to tell anything";
  EXPECT_TRUE(RefusalsSummarised(log.substr(log_before))) << log.substr(log_before, 20000);
  EXPECT_TRUE(Contains(log, "similar messages suppressed")) << log.substr(log_before, 20000);

  const PromText m = CtlMetrics(dir_, cluster.node(1).admin_socket());
  ASSERT_TRUE(m.ok) << m.error;
  // A hello without a credential munged can read, and data before any hello, are credentials
  // refused; a hello of 1 MiB is no hello of this protocol.
  EXPECT_EQ(AuthRefused(m, "data"), static_cast<double>(sent[0] + sent[2]));
  EXPECT_EQ(Refused(m, "data", "malformed"), static_cast<double>(sent[1]));
  EXPECT_EQ(Refused(m, "data", "source_cap"), 36.0);
  EXPECT_EQ(Refused(m, "data", "auth_timeout"), 64.0);
  EXPECT_EQ(Refused(m, "data", "frame_timeout"), 0.0);
  EXPECT_EQ(AuthRefused(m, "peer_call"), 0.0);
}

TEST_F(PortFloods, PeerPortFloodKeepsTheLogSmallAndCountsEveryRefusal) {
  std::vector<std::string> flags = MungeFlags(munged_);
  for (const char* f : {"--hello-timeout-ms", "2000"}) flags.push_back(f);
  Cluster cluster(dir_, 2, flags);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const int port = cluster.peer_port(1);
  const size_t log_before = cluster.node(1).Log().size();
  const auto start = Clock::now();

  // Peer calls with a credential that is none, on one channel; and connections that speak no
  // HTTP/2, each waiting for its close.
  auto stub = peer::Peer::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  uint64_t calls_refused = 0, calls_other = 0, garbage = 0, garbage_not_closed = 0;
  for (uint64_t i = 0; i < 30000 && Clock::now() - start < kFloodTime; ++i) {
    if (i % 2 == 0) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + seconds(5));
      ctx.AddMetadata(kMungeMetadataKey, "not-munge");
      peer::HelloRequest req;
      req.set_protocol_version(kPeerProtocolVersion);
      req.set_node_name("intruder");
      peer::HelloReply reply;
      const grpc::Status s = stub->Hello(&ctx, req, &reply);
      // The channel's connection is cut at the hello timeout (no call on it passes): the calls
      // under way then fail as unavailable, and the channel connects again.
      ++(s.error_code() == grpc::StatusCode::UNAUTHENTICATED ? calls_refused : calls_other);
    } else {
      ++garbage;
      if (!RefusedAfterSending("127.0.0.2", port, "GET / HTTP/1.1\r\nHost: ohio\r\n\r\n")) ++garbage_not_closed;
    }
  }
  EXPECT_EQ(garbage_not_closed, 0u);
  stub.reset();
  ExpectJobRuns(dir_, cluster, "after-peer-flood");
  AwaitRefusalSummary(cluster.node(1));
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const std::string log = cluster.node(1).Log();
  const double grew = static_cast<double>(log.size() - log_before);
  std::printf("peer port: %llu calls and %llu connections in %.1f s; the log grew %.0f B (%.0f B/s)\n",
              static_cast<unsigned long long>(calls_refused + calls_other), static_cast<unsigned long long>(garbage),
              elapsed, grew, grew / elapsed);
  EXPECT_LE(grew / elapsed, kMaxLogBytesPerSecond) << log.substr(log_before, 20000);
  EXPECT_GT(calls_refused, 100u) << "the flood was too slow to tell anything";
  EXPECT_LT(calls_other, calls_refused / 10 + 10);
  EXPECT_TRUE(RefusalsSummarised(log.substr(log_before))) << log.substr(log_before, 20000);

  const PromText m = CtlMetrics(dir_, cluster.node(1).admin_socket());
  ASSERT_TRUE(m.ok) << m.error;
  // Every call answered UNAUTHENTICATED was counted; a call refused just as the hello timeout
  // cut its connection reached the caller as unavailable instead.
  EXPECT_GE(AuthRefused(m, "peer_call"), static_cast<double>(calls_refused));
  EXPECT_LE(AuthRefused(m, "peer_call"), static_cast<double>(calls_refused + calls_other));
  // Each connection that spoke no HTTP/2 was dropped by gRPC before any call on it passed; so
  // was the flood's channel's last connection if it was still up when the channel went.
  EXPECT_GE(Refused(m, "peer", "closed_unauthenticated"), static_cast<double>(garbage));
  EXPECT_LE(Refused(m, "peer", "closed_unauthenticated"), static_cast<double>(garbage + 1));
  // The flood's channel, its calls all refused, was cut at the hello timeout (at least once).
  EXPECT_GE(Refused(m, "peer", "auth_timeout"), 1.0);
  EXPECT_GE(elapsed, 2.0);
}

TEST_F(PortFloods, IdlePeerConnectionsAreCappedAndClosedAndPeersStillGetIn) {
  std::vector<std::string> flags = MungeFlags(munged_);
  for (const char* f : {"--hello-timeout-ms", "3000"}) flags.push_back(f);
  Cluster cluster(dir_, 2, flags);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const int port = cluster.peer_port(1);
  const pid_t pid = cluster.node(1).pid();
  const size_t baseline = OpenDescriptors(pid);
  ASSERT_GT(baseline, 0u);

  // 2,000 idle connections from one host, held open by this test.
  std::vector<int> idle;
  const auto start = Clock::now();
  for (int i = 0; i < 2000 && Clock::now() - start < seconds(30); ++i) {
    const int fd = ConnectFrom("127.0.0.2", port);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    idle.push_back(fd);
  }
  ASSERT_EQ(idle.size(), 2000u);
  // Its half of the cap (64) is let in, each with gRPC's descriptor and the gate's copy; the
  // others are closed as they come. Meanwhile the cluster's own peer gets in: a job across both.
  const size_t during = OpenDescriptors(pid);
  std::thread job([&] { ExpectJobRuns(dir_, cluster, "during-idle-flood"); });
  size_t most = during;
  const auto watch_until = Clock::now() + seconds(2);
  while (Clock::now() < watch_until) {
    most = std::max(most, OpenDescriptors(pid));
    std::this_thread::sleep_for(milliseconds(100));
  }
  const auto closed = WhenClosedByPeer(idle, seconds(20));
  job.join();
  size_t never_closed = 0;
  for (const auto& t : closed) never_closed += t == Clock::time_point{} ? 1 : 0;
  EXPECT_EQ(never_closed, 0u);
  for (int fd : idle) close(fd);
  std::printf("peer port: %zu descriptors before, %zu with 2000 idle connections (at most %zu while a job ran)\n",
              baseline, during, most);
  // 2 x 64 for the connections let in, and room for the job's own (its ranks' control
  // connections, peer and data connections): far below one per idle connection.
  EXPECT_LE(during, baseline + 2 * 64 + 16);
  EXPECT_LE(most, baseline + 2 * 64 + 64);

  const PromText m = CtlMetrics(dir_, cluster.node(1).admin_socket());
  ASSERT_TRUE(m.ok) << m.error;
  // Each connection was refused or timed out: none got in any other way. Opening 2,000 can take
  // longer than the hello timeout on a loaded machine, and then more than one round of 64 is let
  // in, one after another.
  EXPECT_EQ(Refused(m, "peer", "source_cap") + Refused(m, "peer", "auth_timeout"), 2000.0);
  EXPECT_GE(Refused(m, "peer", "auth_timeout"), 64.0);
  EXPECT_GE(Refused(m, "peer", "source_cap"), 1000.0);
  EXPECT_EQ(m.Value("ohio_unauthenticated_peer_connections"), 0.0);
  const std::string log = cluster.node(1).Log();
  EXPECT_TRUE(Contains(log, "peer port: refused a connection from 127.0.0.2:")) << log.substr(0, 20000);
  EXPECT_TRUE(Contains(log, "127.0.0.2 has 64 connections that have made no authenticated call yet, half of "
                            "max-unauthenticated-peer-connections = 128"))
      << log.substr(0, 20000);
  EXPECT_TRUE(Contains(log, "no authenticated call within hello-timeout-ms = 3000")) << log.substr(0, 20000);

  // Every host's share held at once (two hosts of 64): a third host is refused for the total.
  std::vector<int> waiting;
  for (const char* host : {"127.0.0.3", "127.0.0.4"}) {
    for (int i = 0; i < 64; ++i) {
      waiting.push_back(ConnectFrom(host, port));
      ASSERT_GE(waiting.back(), 0);
    }
  }
  EXPECT_FALSE(ClosedByPeer(waiting.back(), milliseconds(300)));
  const int third = ConnectFrom("127.0.0.5", port);
  ASSERT_GE(third, 0);
  EXPECT_TRUE(ClosedByPeer(third, seconds(2)));
  close(third);
  for (int fd : waiting) close(fd);
  EXPECT_EQ(Refused(CtlMetrics(dir_, cluster.node(1).admin_socket()), "peer", "total_cap"), 1.0);
  ExpectJobRuns(dir_, cluster, "after-idle-flood");
}

TEST_F(PortFloods, AFrameLeftUnfinishedOnTheDataPortIsCutAtTheFrameTimeout) {
  std::vector<std::string> flags = MungeFlags(munged_);
  for (const char* f : {"--transport", "tcp", "--data-frame-timeout-ms", "1500"}) flags.push_back(f);
  Cluster cluster(dir_, 2, flags);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const int port = cluster.data_port(1);
  auto auth = PeerAuth::Start("munge", munged_.socket(), "test");
  ASSERT_TRUE(auth.ok()) << auth.status().message();

  // Two hosts with good credentials say hello; one then sends part of a frame's header, the
  // other a put's header and part of its payload, and both stop there.
  struct Stalled {
    const char* source;
    const char* name;
    std::string partial;
    int fd = -1;
  };
  std::vector<Stalled> stalled = {{"127.0.0.2", "x2", Frame(kPutFrame, 1, 64, "").substr(0, 12)},
                                  {"127.0.0.3", "x3", Frame(kPutFrame, 999, 4096, std::string(100, 'p'))}};
  for (auto& s : stalled) {
    auto cred = auth.value()->Mint(kDataPurpose, cluster.name(1));
    ASSERT_TRUE(cred.ok()) << cred.status().message();
    const std::string hello = std::string(s.name) + '\0' + cred.value();
    s.fd = ConnectFrom(s.source, port);
    ASSERT_GE(s.fd, 0);
    ASSERT_TRUE(SendAll(s.fd, Frame(kHelloFrame, 0, hello.size(), hello)));
  }
  // Both were let in: they are not closed while they send nothing.
  std::this_thread::sleep_for(milliseconds(500));
  for (const auto& s : stalled) EXPECT_FALSE(ClosedByPeer(s.fd, milliseconds(1))) << cluster.node(1).Log();
  const auto sent = Clock::now();
  for (const auto& s : stalled) ASSERT_TRUE(SendAll(s.fd, s.partial));
  std::vector<int> fds;
  for (const auto& s : stalled) fds.push_back(s.fd);
  const auto closed = WhenClosedByPeer(fds, seconds(30));
  for (size_t i = 0; i < closed.size(); ++i) {
    ASSERT_NE(closed[i], Clock::time_point{}) << stalled[i].source << " was never closed\n" << cluster.node(1).Log();
    const double after = std::chrono::duration<double>(closed[i] - sent).count();
    std::printf("data port: a frame left unfinished from %s closed after %.2f s\n", stalled[i].source, after);
    // Not before the timeout, and long before the 30 s such a connection was held without it.
    EXPECT_GE(after, 1.4);
    EXPECT_LE(after, 1.5 + 6.0);
  }
  for (int fd : fds) close(fd);
  const PromText m = CtlMetrics(dir_, cluster.node(1).admin_socket());
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(Refused(m, "data", "frame_timeout"), 2.0);
  EXPECT_TRUE(Contains(cluster.node(1).Log(), "a frame begun more than data-frame-timeout-ms = 1500 ago is unfinished"))
      << cluster.node(1).Log();
  ExpectJobRuns(dir_, cluster, "after-stalled-frames");
}

}  // namespace
}  // namespace ohio::testing
