// Which peers ohiod calls, and how: only the cluster's nodes as its configuration names them (a
// group naming another node is refused at its join, and nothing is dialled), a few calls at a
// time with at most one per node (200 nodes that accept and never answer, named by another
// user's group, do not hold up a root job's setup), and channels closed once unused (after the
// hostile group is gone, its channels and threads go too, and its nodes are not dialled again).
// Real daemons; the silent nodes are listening sockets that accept and never answer.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/daemon_threads.h"
#include "tests/harness/process.h"
#include "tests/harness/rank_job.h"

namespace ohio::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kDeadline = seconds(60);
constexpr uid_t kNobody = 65534;
// ohio's own threads in a daemon: 6 at rest (the peer port's gate among them) and the
// peer-calling threads (peer-calls-at-once, 4) while calls wait; gRPC's, which grow with the load
// of the moment: as emulated_scale_test allows an idle daemon of 32 nodes.
constexpr uint32_t kMostOwnThreads = 10;
constexpr uint32_t kMostLibraryThreads = 30;

bool Contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

// No thread per node or channel (the daemon had grown to 69 threads with 3,000 nodes named).
void ExpectNoThreadPerNode(pid_t pid) {
  const DaemonThreads threads = CountThreads(pid);
  EXPECT_LE(threads.own, kMostOwnThreads) << threads.Describe();
  EXPECT_LE(threads.library, kMostLibraryThreads) << threads.Describe();
}

// Listening TCP sockets that accept every connection and never send a byte: what a node looks
// like whose daemon hangs, or a host that is not a daemon at all. Counts what they accepted.
class SilentNodes {
 public:
  // `count` sockets on `address`, each on `port` (0: a free one each).
  SilentNodes(const std::string& address, int count, int port = 0) {
    for (int i = 0; i < count; ++i) {
      const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      const int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      // A fixed port may be held by this test run beside (every listener there must see nothing).
      if (port != 0) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(port));
      inet_pton(AF_INET, address.c_str(), &a.sin_addr);
      socklen_t len = sizeof(a);
      if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 64) != 0 ||
          getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        ADD_FAILURE() << "cannot listen on " << address << ":" << port << ": " << std::strerror(errno);
        close(fd);
        continue;
      }
      listeners_.push_back(fd);
      ports_.push_back(ntohs(a.sin_port));
    }
    thread_ = std::thread([this] { Serve(); });
  }
  ~SilentNodes() {
    stop_ = true;
    thread_.join();
    for (int fd : listeners_) close(fd);
    for (int fd : accepted_fds_) close(fd);
  }
  const std::vector<int>& ports() const { return ports_; }
  uint64_t accepted() const { return accepted_.load(); }

 private:
  void Serve() {
    std::vector<pollfd> fds;
    for (int fd : listeners_) fds.push_back({fd, POLLIN, 0});
    while (!stop_) {
      if (poll(fds.data(), fds.size(), 50) <= 0) continue;
      for (const pollfd& p : fds) {
        if ((p.revents & POLLIN) == 0) continue;
        for (int c; (c = accept4(p.fd, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) {
          accepted_fds_.push_back(c);  // held open, never answered
          ++accepted_;
        }
      }
    }
  }
  std::vector<int> listeners_;
  std::vector<int> ports_;
  std::vector<int> accepted_fds_;
  std::atomic<uint64_t> accepted_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// One rank of uid nobody on `daemon` (node 0 of the group), of a group whose every other rank
// is on one of `others`: it joins and stalls, as a user's job whose other nodes never come.
std::unique_ptr<Process> HostileRank(const TempDir& dir, const Daemon& daemon, const std::string& self,
                                     const std::vector<std::string>& others, const std::string& name) {
  std::vector<std::string> argv = {RankToolAnyoneCanRun(dir), "--socket", daemon.socket(), "--key", KeyHex(name),
                                   "--size", std::to_string(others.size() + 1), "--rank", "0", "--stall", "--nodes",
                                   self};
  argv.insert(argv.end(), others.begin(), others.end());
  argv.push_back("--rank-node");
  for (size_t n = 0; n <= others.size(); ++n) argv.push_back(std::to_string(n));
  return std::make_unique<Process>(argv, dir.file(name + ".out"), kNobody);
}

// How long node `log`'s side took to open the group of 2 nodes ("open on its 2 nodes N ms
// after its creation here"), -1 if it did not.
int OpenedAfterMs(const std::string& log) {
  std::smatch m;
  static const std::regex kOpened("open on its 2 nodes ([0-9]+) ms after its creation here");
  return std::regex_search(log, m, kOpened) ? std::stoi(m[1]) : -1;
}

TEST(PeerNodes, AGroupNamingNodesTheClusterDoesNotKnowIsRefusedAtJoinAndNothingIsDialled) {
  TempDir dir;
  // Before the cluster's nodes were configured, a name not in the peers table was looked up by
  // DNS on port 7470: "127.0.0.2" would be dialled here.
  SilentNodes ghost("127.0.0.2", 1, 7470);
  Daemon n0(dir, {"--node-name", "n0", "--peer", "n1=127.0.0.1:1"}, "n0");
  ASSERT_TRUE(n0.Start()) << n0.Log();
  std::vector<std::string> others = {"127.0.0.2"};
  for (int i = 1; i < 3000; ++i) others.push_back("ghost-" + std::to_string(i));
  auto rank = HostileRank(dir, n0, "n0", others, "ghosts");
  EXPECT_EQ(rank->Wait(kDeadline), 1) << rank->Output();
  EXPECT_TRUE(Contains(rank->Output(), "join error"));
  EXPECT_TRUE(Contains(rank->Output(), "the group names node(s) '127.0.0.2', 'ghost-1', 'ghost-2' and 2997 more that "
                                       "ohiod on n0 does not know as this cluster's nodes"))
      << rank->Output();
  // A known node among unknown ones does not let them in.
  auto mixed = HostileRank(dir, n0, "n0", {"n1", "127.0.0.2"}, "mixed");
  EXPECT_EQ(mixed->Wait(kDeadline), 1) << mixed->Output();
  EXPECT_TRUE(Contains(mixed->Output(), "the group names node(s) '127.0.0.2' that ohiod on n0")) << mixed->Output();
  std::this_thread::sleep_for(seconds(1));
  EXPECT_EQ(ghost.accepted(), 0u);
  EXPECT_EQ(QueryCounters(n0.admin_socket()).peer_channels(), 0u);
  EXPECT_TRUE(Contains(n0.Log(), "refusing a join of pid")) << n0.Log();
  EXPECT_EQ(n0.Stop(), 0) << n0.Log();
}

TEST(PeerNodes, SilentNodesOfAnotherUsersGroupDelayNoOneAndTheirChannelsAreClosedOnceItIsGone) {
  TempDir dir;
  constexpr int kSilent = 200;
  SilentNodes silent("127.0.0.1", kSilent);
  ASSERT_EQ(silent.ports().size(), static_cast<size_t>(kSilent));
  Cluster cluster(dir, 2, {"--peer-channel-idle-s", "1"});
  // Known to n0, as an admin may list nodes that are down.
  std::vector<std::string> flags, names;
  for (int i = 0; i < kSilent; ++i) {
    names.push_back("s" + std::to_string(i));
    flags.push_back("--peer");
    flags.push_back(names.back() + "=127.0.0.1:" + std::to_string(silent.ports()[i]));
  }
  cluster.AddFlags(0, flags);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const pid_t n0 = cluster.node(0).pid();

  auto hostile = HostileRank(dir, cluster.node(0), cluster.name(0), names, "silent-peers");
  ASSERT_TRUE(hostile->WaitForOutput("joined", kDeadline)) << hostile->Output();
  // Until n0's calling threads are all taken by silent nodes they can be.
  const auto busy_by = std::chrono::steady_clock::now() + seconds(10);
  while (silent.accepted() < 3 && std::chrono::steady_clock::now() < busy_by) std::this_thread::sleep_for(milliseconds(20));
  ASSERT_GE(silent.accepted(), 3u);

  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 1), "root-job",
              {"--bytes", "64", "--iterations", "1"});
  for (int code : job.Wait(kDeadline)) EXPECT_EQ(code, 0) << job.Outputs() << cluster.node(0).Log();
  // Each call to a silent node lasts its second's deadline; the job waited for none of them
  // (it was 12 s when every peer call went through one thread).
  const int opened_ms = OpenedAfterMs(cluster.node(0).Log());
  EXPECT_GE(opened_ms, 0) << cluster.node(0).Log();
  EXPECT_LT(opened_ms, 1000) << "the root job's group took " << opened_ms << " ms to open on n0";
  std::printf("root job's group open on n0 %d ms after its creation, beside %d silent nodes\n", opened_ms, kSilent);
  EXPECT_GE(QueryCounters(cluster.node(0).admin_socket()).peer_channels(), 3u);
  EXPECT_TRUE(hostile->Running()) << hostile->Output();
  ExpectNoThreadPerNode(n0);

  // The user's group goes: its channels are closed (the root job's too, its group gone), and
  // nothing dials the silent nodes again.
  hostile->Signal(SIGKILL);
  hostile->Wait(seconds(10));
  const auto closed_by = std::chrono::steady_clock::now() + seconds(30);
  uint32_t channels = 0;
  do {
    std::this_thread::sleep_for(milliseconds(200));
    channels = QueryCounters(cluster.node(0).admin_socket()).peer_channels();
  } while (channels != 0 && std::chrono::steady_clock::now() < closed_by);
  EXPECT_EQ(channels, 0u) << cluster.node(0).Log();
  const uint64_t accepted = silent.accepted();
  std::this_thread::sleep_for(seconds(3));
  EXPECT_EQ(silent.accepted(), accepted) << "silent nodes dialled after the group that named them was gone";
  ExpectNoThreadPerNode(n0);
  EXPECT_EQ(cluster.node(0).Stop(), 0) << cluster.node(0).Log();
  EXPECT_EQ(cluster.node(1).Stop(), 0) << cluster.node(1).Log();
}

}  // namespace
}  // namespace ohio::testing
