// Groups across nodes when things go wrong, and what the daemons hold: exactly N-1 data
// connections per daemon whatever the groups; ranks on different nodes that disagree on the
// size; a peer daemon killed in the middle of collectives and brought back; a group failed on
// one node told to the others; groups too large for the configured SRB.
#include <signal.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/rank_job.h"
#include "tests/harness/stopped_process.h"
#include "tests/harness/wait_until.h"

namespace ohio::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kDeadline = seconds(120);

bool Contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

std::vector<std::string> Sockets(Cluster& c, const std::vector<uint32_t>& nodes) {
  std::vector<std::string> s;
  for (uint32_t n : nodes) s.push_back(c.node(n).socket());
  return s;
}

std::vector<std::string> Names(Cluster& c, const std::vector<uint32_t>& nodes) {
  std::vector<std::string> s;
  for (uint32_t n : nodes) s.push_back(c.name(n));
  return s;
}

std::vector<uint32_t> AllNodes(Cluster& c) {
  std::vector<uint32_t> n(c.size());
  for (uint32_t i = 0; i < c.size(); ++i) n[i] = i;
  return n;
}


TEST(MultiNodeCluster, EachDaemonHoldsOneConnectionPerPeerNodeWhateverTheGroups) {
  TempDir dir;
  Cluster cluster(dir, 4);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // Two jobs at once: 8 ranks on all four nodes, 3 ranks on nodes 0-2 (interleaved placement).
  RankJob wide(dir, Sockets(cluster, AllNodes(cluster)), Names(cluster, AllNodes(cluster)), ConsecutivePlacement(4, 2), "wide",
               {"--bytes", "1", "65536", "--iterations", "100", "--stall-after"});
  RankJob narrow(dir, Sockets(cluster, {0, 1, 2}), Names(cluster, {0, 1, 2}), {2, 0, 1}, "narrow",
                 {"--bytes", "7", "4096", "--iterations", "100", "--stall-after"});
  // Both jobs finished their alltoalls and hold their groups: ask every daemon now.
  for (uint32_t r = 0; r < wide.size(); ++r) ASSERT_TRUE(wide.rank(r).WaitForOutput("stalling", kDeadline)) << wide.Outputs();
  for (uint32_t r = 0; r < narrow.size(); ++r) {
    ASSERT_TRUE(narrow.rank(r).WaitForOutput("stalling", kDeadline)) << narrow.Outputs();
  }
  for (uint32_t i = 0; i < 4; ++i) {
    StatusQuery q = QueryStatus(cluster.node(i).admin_socket());
    ASSERT_TRUE(q.ok) << q.error;
    EXPECT_EQ(q.reply.data_connections(), 3u) << cluster.name(i) << "\n" << q.reply.DebugString();
    std::vector<std::string> peers(q.reply.connected_peers().begin(), q.reply.connected_peers().end());
    std::sort(peers.begin(), peers.end());
    std::vector<std::string> expected;
    for (uint32_t j = 0; j < 4; ++j) {
      if (j != i) expected.push_back(cluster.name(j));
    }
    EXPECT_EQ(peers, expected) << cluster.name(i);
    EXPECT_EQ(q.reply.groups(), i < 3 ? 2u : 1u) << q.reply.DebugString();
    EXPECT_GE(q.reply.collectives_served(), 200u) << q.reply.DebugString();
  }
}

TEST(MultiNodeCluster, RanksOnDifferentNodesDisagreeOnTheSize) {
  TempDir dir;
  Cluster cluster(dir, 3);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RankJob job(dir, Sockets(cluster, AllNodes(cluster)), Names(cluster, AllNodes(cluster)), ConsecutivePlacement(3, 2),
              "cross-mismatch", {"--bytes", "64", "--expect", "size mismatch"}, [](uint32_t r) {
                return r / 2 == 1 ? std::vector<std::string>{"--my-bytes", "128"} : std::vector<std::string>{};
              });
  auto codes = job.Wait(kDeadline);
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_EQ(codes[r], 0) << job.Outputs() << cluster.Logs();
    const std::string out = job.rank(r).Output();
    EXPECT_TRUE(Contains(out, "64 on nodes n0,n2; 128 on node n1")) << out;
    EXPECT_TRUE(Contains(out, "after mismatch ok")) << out;
  }
}

TEST(MultiNodeCluster, PeerDaemonKilledMidCollectiveThenBack) {
  TempDir dir;
  // The timeout is far away: the loss must be noticed from the broken connection.
  Cluster cluster(dir, 3, {"--timeout-ms", "120000"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RankJob job(dir, Sockets(cluster, AllNodes(cluster)), Names(cluster, AllNodes(cluster)), ConsecutivePlacement(3, 2),
              "peer-killed", {"--bytes", "4096", "--iterations", "100000000"}, [](uint32_t r) {
                return std::vector<std::string>{"--expect", r / 2 == 2 ? "daemon connection lost" : "group failed"};
              });
  for (uint32_t r = 0; r < job.size(); ++r) ASSERT_TRUE(job.rank(r).WaitForOutput("joined", kDeadline)) << job.Outputs();
  std::this_thread::sleep_for(milliseconds(700));  // collectives are flowing
  cluster.node(2).Kill();
  auto codes = job.Wait(seconds(30));
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_EQ(codes[r], 0) << job.Outputs() << cluster.Logs();
    if (r / 2 != 2) {
      EXPECT_TRUE(Contains(job.rank(r).Output(), "lost the connection to node n2")) << job.rank(r).Output();
    }
  }
  // The same node comes back; a new group over all three nodes works, and each daemon is back
  // to one connection per peer.
  ASSERT_TRUE(cluster.StartNode(2)) << cluster.Logs();
  RankJob again(dir, Sockets(cluster, AllNodes(cluster)), Names(cluster, AllNodes(cluster)), ConsecutivePlacement(3, 2),
                "after-restart", {"--bytes", "1", "4096", "--iterations", "200", "--stall-after"});
  for (uint32_t r = 0; r < again.size(); ++r) {
    ASSERT_TRUE(again.rank(r).WaitForOutput("stalling", kDeadline)) << again.Outputs() << cluster.Logs();
  }
  for (uint32_t i = 0; i < 3; ++i) {
    StatusQuery q = QueryStatus(cluster.node(i).admin_socket());
    ASSERT_TRUE(q.ok) << q.error;
    EXPECT_EQ(q.reply.data_connections(), 2u) << cluster.name(i) << "\n" << q.reply.DebugString();
  }
}

// Node n1 advertises a data address nothing listens on, so n0's dial (the lower name dials) is
// refused: n0's ranks are told that the data connection to n1 never came up, not that it was
// lost (it never was up), with the address and the reason. n1 waits to be dialled: its ranks
// time out, or are told n0's reason if their node meets the group after n0 failed it.
TEST(MultiNodeCluster, DataConnectionThatNeverCameUpIsNotCalledLost) {
  TempDir dir;
  Cluster cluster(dir, 2, {"--timeout-ms", "3000"});
  cluster.AddFlags(1, {"--advertise", "127.0.0.2"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RankJob job(dir, Sockets(cluster, AllNodes(cluster)), Names(cluster, AllNodes(cluster)), ConsecutivePlacement(2, 2),
              "never-up", {"--bytes", "4096", "--iterations", "3"}, [](uint32_t r) {
                return r / 2 == 0 ? std::vector<std::string>{"--expect", "group failed"} : std::vector<std::string>{};
              });
  auto codes = job.Wait(kDeadline);
  const std::string never_up = "the data connection to node n1's ohiod never came up (cannot connect to 127.0.0.2:" +
                               std::to_string(cluster.data_port(1)) + ": ";
  for (uint32_t r = 0; r < job.size(); ++r) {
    const std::string out = job.rank(r).Output();
    EXPECT_FALSE(Contains(out, "lost the connection")) << out;
    if (r / 2 == 0) {
      EXPECT_EQ(codes[r], 0) << job.Outputs() << cluster.Logs();
      EXPECT_TRUE(Contains(out, never_up)) << out;
      // In its call, or at its join when the group had failed already.
      EXPECT_TRUE(Contains(out, "Connection refused)")) << out;
    } else {
      EXPECT_TRUE(Contains(out, "(timeout)") || Contains(out, "has failed on node n0: " + never_up)) << out;
    }
  }
}

// A group that fails on one node for a reason of that node's own is told to its other nodes:
// n0 cannot reach n1's data port (n1 advertises an address nothing listens on), so the group
// fails on n0; n2 sees nothing wrong itself (its connections to n0 and n1 are up) and, with a
// 60 s timeout, would wait for n0 until then. It is told by n0 at once: its rank fails naming
// n0 and n0's reason. A job of n1 and n2 alone then runs as usual.
TEST(MultiNodeCluster, GroupFailedOnOneNodeIsToldToItsOtherNodes) {
  TempDir dir;
  Cluster cluster(dir, 3, {"--timeout-ms", "60000"});
  cluster.AddFlags(1, {"--advertise", "127.0.0.2"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const auto started = std::chrono::steady_clock::now();
  RankJob job(dir, Sockets(cluster, AllNodes(cluster)), Names(cluster, AllNodes(cluster)), ConsecutivePlacement(3, 1),
              "told", {"--bytes", "4096", "--iterations", "3", "--expect", "group failed"});
  const std::string never_up = "the data connection to node n1's ohiod never came up (cannot connect to 127.0.0.2:" +
                               std::to_string(cluster.data_port(1)) + ": ";
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_EQ(job.rank(r).Wait(seconds(15)), 0) << job.Outputs() << cluster.Logs();
    const std::string out = job.rank(r).Output();
    EXPECT_TRUE(Contains(out, (r == 0 ? never_up : "has failed on node n0: " + never_up)) &&
                Contains(out, "Connection refused); the group is closed"))
        << out << cluster.Logs();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, seconds(15)) << "a node waited for its own timeout";
  RankJob other(dir, Sockets(cluster, {1, 2}), Names(cluster, {1, 2}), ConsecutivePlacement(2, 1), "still-works",
                {"--bytes", "4096", "--iterations", "3"});
  for (int code : other.Wait(kDeadline)) EXPECT_EQ(code, 0) << other.Outputs() << cluster.Logs();
}

// A rank killed between two calls (here while it checks its bytes, as the soak found): the
// ranks of every node get the group's failure naming that rank at once, not a timeout that
// blames the node waited for. Both ways its node can learn it: from the dead rank's own
// connection (n2 keeps no other rank) and when its other rank enters the next call (n1).
TEST(MultiNodeCluster, RankKilledBetweenCallsFailsTheGroupOnEveryNode) {
  struct Case {
    std::vector<uint32_t> placement;  // node of each rank
    uint32_t victim;
  };
  // The victim shares n1 with rank 1, or is n1's only rank.
  for (const Case& c : {Case{{0, 1, 1}, 2}, Case{{0, 1}, 1}}) {
    TempDir dir;
    Cluster cluster(dir, 2, {"--timeout-ms", "120000"});
    ASSERT_TRUE(cluster.Start()) << cluster.Logs();
    const uint32_t victim = c.victim;
    RankJob job(dir, Sockets(cluster, AllNodes(cluster)), Names(cluster, AllNodes(cluster)), c.placement,
                "killed-idle-" + std::to_string(c.placement.size()), {"--bytes", "4096", "--iterations", "3"},
                [victim](uint32_t r) {
                  return r == victim ? std::vector<std::string>{"--pause-after-first-ms", "600000"}
                                     : std::vector<std::string>{"--expect", "group failed"};
                });
    ASSERT_TRUE(job.rank(victim).WaitForOutput("paused", kDeadline)) << job.Outputs();
    job.rank(victim).Signal(SIGKILL);
    const auto killed = std::chrono::steady_clock::now();
    for (uint32_t r = 0; r < job.size(); ++r) {
      if (r == victim) continue;
      EXPECT_EQ(job.rank(r).Wait(seconds(20)), 0) << job.Outputs() << cluster.Logs();
      const std::string out = job.rank(r).Output();
      EXPECT_TRUE(Contains(out, "group failed) rank " + std::to_string(victim)) &&
                  Contains(out, "disconnected from ohiod without leaving the group; the group is closed"))
          << out;
    }
    EXPECT_LT(std::chrono::steady_clock::now() - killed, seconds(10)) << "the failure waited for a timeout";
  }
}

// Rank r of a 3-rank group `name` over a 2-node cluster, rank 0 on n0 and ranks 1 and 2 on n1,
// started with `more` flags; its output in DIR/NAME-R.out.
std::unique_ptr<Process> ThreeRankGroupRank(const TempDir& dir, Cluster& cluster, const std::string& name, uint32_t r,
                                            std::vector<std::string> more) {
  std::vector<std::string> argv = {RunfilePath("tests/tools/alltoall_rank"), "--socket", cluster.node(r == 0 ? 0 : 1).socket(),
                                   "--key", KeyHex(name), "--size", "3", "--rank", std::to_string(r),
                                   "--nodes", "n0", "n1", "--rank-node", "0", "1", "1"};
  argv.insert(argv.end(), more.begin(), more.end());
  return std::make_unique<Process>(argv, dir.file(name + "-" + std::to_string(r) + ".out"));
}

// A node that meets a group after it failed elsewhere (a rank there died while this node's
// rank was still on its way) is told why: group failed, naming the rank, not "refused".
TEST(MultiNodeCluster, NodeMeetingAGroupThatFailedElsewhereIsToldWhy) {
  TempDir dir;
  Cluster cluster(dir, 2, {"--timeout-ms", "120000"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  auto rank = [&](uint32_t r, std::vector<std::string> more) {
    return ThreeRankGroupRank(dir, cluster, "failed-before-met", r, std::move(more));
  };
  // n1's two ranks join and wait; one dies: the group fails on n1, its other rank still in it.
  auto stays = rank(1, {"--stall"});
  auto dies = rank(2, {"--stall"});
  ASSERT_TRUE(stays->WaitForOutput("joined", kDeadline)) << stays->Output();
  ASSERT_TRUE(dies->WaitForOutput("joined", kDeadline)) << dies->Output();
  dies->Signal(SIGKILL);
  dies->Wait(kDeadline);
  auto late = rank(0, {"--expect", "group failed"});
  EXPECT_EQ(late->Wait(seconds(20)), 0) << late->Output() << cluster.Logs();
  EXPECT_TRUE(Contains(late->Output(), "has failed on node n1: rank 2 (pid ")) << late->Output();
  EXPECT_TRUE(Contains(late->Output(), "disconnected from ohiod without leaving the group; the group is closed"))
      << late->Output();
}

// The same when the group failed elsewhere and was forgotten there before this node's rank
// came: n1's two ranks join, one dies, the other leaves, and n1 closes the group. n0's rank,
// joining after that, is told why within seconds (n1 keeps a record of the failure for the
// group's timeout), not left to wait that timeout for ranks that will never join on n1.
TEST(MultiNodeCluster, NodeMeetingAGroupFailedAndClosedElsewhereIsToldWhy) {
  TempDir dir;
  Cluster cluster(dir, 2, {"--timeout-ms", "120000"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  auto rank = [&](uint32_t r, std::vector<std::string> more) {
    return ThreeRankGroupRank(dir, cluster, "failed-and-closed", r, std::move(more));
  };
  auto leaves = rank(1, {"--stall"});
  auto dies = rank(2, {"--stall"});
  ASSERT_TRUE(leaves->WaitForOutput("joined", kDeadline)) << leaves->Output();
  ASSERT_TRUE(dies->WaitForOutput("joined", kDeadline)) << dies->Output();
  {
    // Both connections close while n1 is stopped: its control thread then finds them in one pass
    // and forgets the group, most often before its engine has failed it for the first.
    const StoppedForScope stopped(cluster.node(1).pid());
    ASSERT_TRUE(stopped.stopped()) << cluster.Logs();
    dies->Signal(SIGKILL);
    dies->Wait(kDeadline);
    leaves->Signal(SIGKILL);
    leaves->Wait(kDeadline);
  }
  ASSERT_TRUE(WaitUntil([&] { return Contains(cluster.node(1).Log(), "closed, all local ranks gone"); }, kDeadline))
      << cluster.Logs();
  const auto started = std::chrono::steady_clock::now();
  auto late = rank(0, {"--expect", "group failed"});
  EXPECT_EQ(late->Wait(seconds(20)), 0) << late->Output() << cluster.Logs();
  EXPECT_LT(std::chrono::steady_clock::now() - started, seconds(20)) << "n0 waited for its timeout";
  EXPECT_TRUE(Contains(late->Output(), "has failed on node n1: rank 2 (pid ")) << late->Output();
}

// A peer daemon killed while large puts to it are under way: the groups fail, and once their
// ranks have left the surviving daemons hold no segment but those their registration cache
// keeps (puts that will never complete are forgotten; the soak found one kept for good).
TEST(MultiNodeCluster, PeerKilledMidPutsLeavesNoSegmentBehind) {
  TempDir dir;
  Cluster cluster(dir, 3, {"--timeout-ms", "120000"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RankJob job(dir, Sockets(cluster, AllNodes(cluster)), Names(cluster, AllNodes(cluster)), ConsecutivePlacement(3, 2),
              "killed-mid-puts", {"--bytes", "1048576", "--iterations", "100000000"}, [](uint32_t r) {
                return std::vector<std::string>{"--expect", r / 2 == 2 ? "daemon connection lost" : "group failed"};
              });
  for (uint32_t r = 0; r < job.size(); ++r) ASSERT_TRUE(job.rank(r).WaitForOutput("joined", kDeadline)) << job.Outputs();
  std::this_thread::sleep_for(milliseconds(700));
  cluster.node(2).Kill();
  auto codes = job.Wait(seconds(30));
  for (uint32_t r = 0; r < job.size(); ++r) EXPECT_EQ(codes[r], 0) << job.Outputs() << cluster.Logs();
  for (uint32_t i = 0; i < 2; ++i) {
    const pid_t pid = cluster.node(i).pid();
    const auto cached = [&] {
      const StatusQuery q = QueryStatus(cluster.node(i).admin_socket());
      return q.ok ? static_cast<int>(q.reply.segment_cache().cached_segments()) : -1;
    };
    const auto end = std::chrono::steady_clock::now() + seconds(10);
    while (CountOpenFds(pid, "memfd:ohio-group") != cached() && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(milliseconds(20));
    }
    EXPECT_EQ(CountOpenFds(pid, "memfd:ohio-group"), cached()) << cluster.name(i) << "\n" << cluster.Logs();
    EXPECT_EQ(CountMappings(pid, "memfd:ohio-group"), cached()) << cluster.name(i);
    EXPECT_LE(cached(), 1) << cluster.name(i);
  }
}

TEST(MultiNodeCluster, DesignFromTheEnvironmentAndRefusedWhenRanksDiffer) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // OHIO_DESIGN, and its former name OHIO_ALGORITHM alone, inherited by the rank processes.
  setenv("OHIO_DESIGN", "v1", 1);
  setenv("OHIO_ALGORITHM", "v2", 1);  // the new name wins
  RankJob job(dir, Sockets(cluster, AllNodes(cluster)), Names(cluster, AllNodes(cluster)), ConsecutivePlacement(2, 2), "env-v1",
              {"--bytes", "1", "4096", "--iterations", "20", "--stall-after"});
  unsetenv("OHIO_DESIGN");
  for (uint32_t r = 0; r < job.size(); ++r) ASSERT_TRUE(job.rank(r).WaitForOutput("stalling", kDeadline)) << job.Outputs();
  RankJob former(dir, Sockets(cluster, AllNodes(cluster)), Names(cluster, AllNodes(cluster)), ConsecutivePlacement(2, 2),
                 "env-v2", {"--bytes", "1", "4096", "--iterations", "20", "--stall-after"});
  unsetenv("OHIO_ALGORITHM");
  for (uint32_t r = 0; r < former.size(); ++r) {
    ASSERT_TRUE(former.rank(r).WaitForOutput("stalling", kDeadline)) << former.Outputs();
  }
  for (uint32_t i = 0; i < 2; ++i) {
    StatusQuery q = QueryStatus(cluster.node(i).admin_socket());
    ASSERT_TRUE(q.ok) << q.error;
    ASSERT_EQ(q.reply.group_size(), 2);
    std::vector<std::string> designs = {q.reply.group(0).algorithm(), q.reply.group(1).algorithm()};
    std::sort(designs.begin(), designs.end());
    EXPECT_EQ(designs, (std::vector<std::string>{"v1", "v2"}));
  }
  // Nodes whose ranks ask for different algorithms refuse each other when they meet, and the
  // ranks are told both.
  // Rank 0 holds its node's group open (were it to exit first, its node would forget the group
  // and answer the other node "no rank has joined yet" until the timeout, not the refusal).
  RankJob odd(dir, Sockets(cluster, AllNodes(cluster)), Names(cluster, AllNodes(cluster)), {0, 1}, "mixed",
              {"--bytes", "8"}, [](uint32_t r) {
                return r == 0 ? std::vector<std::string>{"--algorithm", "v2", "--stall"}
                              : std::vector<std::string>{"--algorithm", "v3", "--expect", "refused"};
              });
  ASSERT_TRUE(odd.rank(0).WaitForOutput("joined", kDeadline)) << odd.Outputs();
  EXPECT_EQ(odd.rank(1).Wait(kDeadline), 0) << odd.Outputs();
  const std::string out = odd.rank(1).Output();
  EXPECT_TRUE(Contains(out, "with v2") && Contains(out, "with v3")) << out;
}

TEST(MultiNodeCluster, GroupTooLargeForTheSrb) {
  TempDir dir;
  Cluster cluster(dir, 2, {"--srb-bytes", "4KiB"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // 65 ranks per node with v2: the SRB must hold one byte of each of 65 x 65 remote messages.
  std::vector<std::string> placement = {"--nodes", "n0", "n1", "--rank-node"};
  for (uint32_t g = 0; g < 130; ++g) placement.push_back(g < 65 ? "0" : "1");
  std::vector<std::unique_ptr<Process>> ranks;
  for (uint32_t r : {0u, 65u}) {
    std::vector<std::string> argv = {RunfilePath("tests/tools/alltoall_rank"), "--socket",
                                     cluster.node(r / 65).socket(), "--key", KeyHex("srb-too-small"), "--size", "130",
                                     "--rank", std::to_string(r), "--algorithm", "v2", "--expect",
                                     "not enough shared memory"};
    argv.insert(argv.end(), placement.begin(), placement.end());
    ranks.push_back(std::make_unique<Process>(argv, dir.file("srb-rank" + std::to_string(r) + ".out")));
  }
  for (auto& p : ranks) {
    EXPECT_EQ(p->Wait(kDeadline), 0) << p->Output();
    EXPECT_TRUE(Contains(p->Output(), "with v2 a group of 130 ranks needs an SRB of at least 4225 bytes per node; "
                                      "ohiod is configured with srb_bytes = 4096"))
        << p->Output();
  }
}

}  // namespace
}  // namespace ohio::testing
