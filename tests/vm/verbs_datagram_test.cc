// The verbs transport's UD service on a real RDMA stack (the Soft-RoCE guest): real ohiods sharing
// the guest's rxe devices as 4 nodes, with a bounded pool of RC queue pairs (rc-pool), the peers
// beyond it reached through each rail's one UD queue pair. Real rank processes check every byte.
// Shown here: with rc-pool 1 no daemon holds more than one RC queue pair per rail (by the daemon
// and by the kernel) and reaches the rest over UD; with rc-pool 0 every peer is over UD; alltoall
// at sizes within one datagram and of many, alltoallv and ialltoall verified byte for byte; loss
// on arrival (drop-one-datagram-in) hidden by retransmission, counted; a peer daemon killed
// mid-collective fails the others' group within the datagram timeout, naming it; and the pool
// following the traffic while jobs run (rc-pool-interval-ms): the busy peer promoted to RC, the
// idle one demoted to UD, every call verified and both moves counted at both ends.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>

#include "tests/harness/cluster.h"
#include "tests/harness/rank_job.h"
#include "tests/vm/verbs_cluster_checks.h"

namespace ohio::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kDeadline = kVerbsDeadline;
constexpr uint32_t kNodes = 4;

// Every daemon is connected to every other node, holds at most `pool` RC queue pairs per rail
// and reaches the rest over UD (at least `min_datagram_peers` of them), by its own account and the
// kernel's; returns the counters.
std::vector<admin::TransportCounters> ExpectPool(Cluster& c, uint32_t pool, uint32_t min_datagram_peers) {
  std::vector<admin::TransportCounters> out;
  for (uint32_t i = 0; i < c.size(); ++i) {
    SCOPED_TRACE(c.name(i));
    const StatusQuery q = QueryStatus(c.node(i).admin_socket());
    EXPECT_TRUE(q.ok) << q.error;
    const admin::TransportCounters& t = q.reply.transport_counters();
    const uint32_t rails = static_cast<uint32_t>(t.rails_size());
    EXPECT_EQ(q.reply.transport(), "verbs");
    EXPECT_EQ(t.rc_pool(), pool);
    EXPECT_EQ(q.reply.data_connections(), c.size() - 1) << q.reply.DebugString();
    EXPECT_LE(t.queue_pairs(), pool * rails) << q.reply.DebugString();
    EXPECT_GE(t.datagram_peers(), min_datagram_peers) << q.reply.DebugString();
    EXPECT_EQ(t.queue_pairs() / std::max(rails, 1u) + t.datagram_peers(), c.size() - 1) << q.reply.DebugString();
    std::string listing;
    EXPECT_EQ(KernelQueuePairs(c.node(i).pid(), "RC", &listing), static_cast<int>(t.queue_pairs())) << listing;
    EXPECT_EQ(KernelQueuePairs(c.node(i).pid(), "UD", &listing), static_cast<int>(rails)) << listing;
    // `ohioctl peers` names each peer's service: as many on RC as the daemon has RC queue pairs.
    uint32_t rc = 0, ud = 0;
    const admin::ListPeersReply peers = QueryPeers(c.node(i).admin_socket());
    for (const auto& p : peers.peers()) {
      if (p.state() != "connected") continue;
      rc += p.link() == "verbs RC";
      ud += p.link() == "verbs UD";
    }
    EXPECT_EQ(rc * std::max(rails, 1u), t.queue_pairs());
    EXPECT_EQ(ud, t.datagram_peers());
    out.push_back(t);
  }
  return out;
}

// Alltoall (1 B and 700 B fit one datagram; 4097 B and 64 KiB need several, 1 MiB hundreds of
// them per node pair), alltoallv and ialltoall on 4 nodes x 2, every byte checked by the ranks.
void RunEveryCall(const TempDir& dir, Cluster& cluster, const std::string& name) {
  const auto placement = ConsecutivePlacement(kNodes, 2);
  for (const char* algo : {"v1", "v3"}) {
    RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), placement, name + "-" + algo,
                {"--bytes", "1", "700", "4097", "65536", "--iterations", "3", "--algorithm", algo});
    ExpectAllOk(job, name + " alltoall " + algo, cluster);
  }
  RankJob large(dir, ControlSockets(cluster), NodeNames(cluster), placement, name + "-large",
                {"--bytes", "1048576", "--iterations", "2"});
  ExpectAllOk(large, name + " alltoall 1 MiB", cluster);
  RankJob vector(dir, ControlSockets(cluster), NodeNames(cluster), placement, name + "-v",
                 {"--calls", "4", "--max-bytes", "3000", "--seed", "5"}, nullptr, std::nullopt,
                 "tests/tools/alltoallv_rank");
  ExpectAllOk(vector, name + " alltoallv", cluster);
  RankJob nonblocking(dir, ControlSockets(cluster), NodeNames(cluster), placement, name + "-i",
                      {"--batches", "2", "--outstanding", "2", "--bytes", "5000"}, nullptr, std::nullopt,
                      "tests/tools/ialltoall_rank");
  ExpectAllOk(nonblocking, name + " ialltoall", cluster);
}

TEST(VerbsDatagrams, PoolOfOneReachesTheOtherPeersOverUd) {
  TempDir dir;
  // The first peers connected keep the pool (no planning), so that what holds it is known.
  Cluster cluster(dir, kNodes, Verbs({"--rc-pool", "1", "--rc-pool-interval-ms", "0"}));
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RunEveryCall(dir, cluster, "pool1");
  const auto counters = ExpectPool(cluster, 1, 2);
  uint64_t datagram_puts = 0;
  for (const auto& t : counters) datagram_puts += t.datagram_puts();
  EXPECT_GT(datagram_puts, 0u) << cluster.Logs();
}

TEST(VerbsDatagrams, PoolOfNoneReachesEveryPeerOverUd) {
  TempDir dir;
  Cluster cluster(dir, kNodes, Verbs({"--rc-pool", "0"}));
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RunEveryCall(dir, cluster, "pool0");
  for (const auto& t : ExpectPool(cluster, 0, kNodes - 1)) {
    EXPECT_EQ(t.queue_pairs(), 0u);
    EXPECT_EQ(t.direct_puts(), 0u);  // not one RDMA write: every put went as datagrams
    EXPECT_GT(t.datagram_puts(), 0u);
    // Soft-RoCE on one guest loses nothing: what is sent again is only what an acknowledgement
    // slower than the timeout made due (the first calls, before a round trip is measured), never
    // a flood of copies of a window the receiver is still taking in.
    EXPECT_EQ(t.datagrams_dropped(), 0u);
    EXPECT_LE(t.datagram_retransmissions(), t.datagrams_sent() / 20) << t.DebugString();
  }
}

// One datagram in 7 is dropped on arrival at every daemon: every call still completes with every
// byte right, the loss shows in the counters, and the retransmissions that made up for it too.
TEST(VerbsDatagrams, LossIsHiddenByRetransmission) {
  TempDir dir;
  Cluster cluster(dir, kNodes, Verbs({"--rc-pool", "0", "--drop-one-datagram-in", "7"}));
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RunEveryCall(dir, cluster, "loss");
  for (const auto& t : ExpectPool(cluster, 0, kNodes - 1)) {
    EXPECT_GT(t.datagrams_dropped(), 0u);
    EXPECT_GE(t.datagram_retransmissions(), 1u);
  }
  uint64_t dropped = 0, resent = 0;
  for (uint32_t i = 0; i < kNodes; ++i) {
    const auto t = QueryCounters(cluster.node(i).admin_socket()).transport_counters();
    dropped += t.datagrams_dropped();
    resent += t.datagram_retransmissions();
  }
  // Every datagram dropped was sent again (an acknowledgement dropped makes a retransmission
  // whose copy arrives as a duplicate), so the daemons together sent at least as many again.
  EXPECT_GE(resent, dropped / 2) << "dropped " << dropped << ", sent again " << resent;
}

// A peer daemon killed mid-collective: over UD nothing fails a send, so its silence is what
// tells: the others' groups fail within the datagram timeout (8 s), far inside the group's.
TEST(VerbsDatagrams, SilentPeerFailsTheGroupNamingIt) {
  TempDir dir;
  Cluster cluster(dir, 3, Verbs({"--rc-pool", "0", "--timeout-ms", "120000"}));
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(3, 2), "ud-peer-killed",
              {"--bytes", "4096", "--iterations", "100000000"}, [](uint32_t r) {
                return std::vector<std::string>{"--expect", r / 2 == 2 ? "daemon connection lost" : "group failed"};
              });
  for (uint32_t r = 0; r < job.size(); ++r) ASSERT_TRUE(job.rank(r).WaitForOutput("joined", kDeadline)) << job.Outputs();
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  while (QueryCounters(cluster.node(0).admin_socket()).collectives_served() < 20 &&
         std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  cluster.node(2).Kill();
  auto codes = job.Wait(seconds(90));
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_EQ(codes[r], 0) << job.Outputs() << cluster.Logs();
    if (r / 2 != 2) EXPECT_TRUE(Contains(job.rank(r).Output(), "n2")) << job.rank(r).Output();
  }
  EXPECT_TRUE(Contains(cluster.node(0).Log(), "acknowledged no datagram")) << cluster.node(0).Log();
}

// The link ohioctl peers shows from node `from` to node `to` ("" when not connected).
std::string LinkBetween(Cluster& c, uint32_t from, uint32_t to) {
  const admin::ListPeersReply reply = QueryPeers(c.node(from).admin_socket());
  for (const auto& p : reply.peers()) {
    if (p.node() == c.name(to) && p.state() == "connected") return p.link();
  }
  return "";
}

// Jobs of 2 ranks on each of nodes `a` and `b` alone: alltoall at a size of one datagram and of
// many, and ialltoall, verified byte for byte.
void RunPair(const TempDir& dir, Cluster& cluster, uint32_t a, uint32_t b, const std::string& name) {
  const std::vector<std::string> sockets{cluster.node(a).socket(), cluster.node(b).socket()};
  const std::vector<std::string> names{cluster.name(a), cluster.name(b)};
  RankJob job(dir, sockets, names, ConsecutivePlacement(2, 2), name,
              {"--bytes", "700", "16384", "--iterations", "20", "--algorithm", "v1"});
  ExpectAllOk(job, name, cluster);
  RankJob nonblocking(dir, sockets, names, ConsecutivePlacement(2, 2), name + "-i",
                      {"--batches", "2", "--outstanding", "2", "--bytes", "5000"}, nullptr, std::nullopt,
                      "tests/tools/ialltoall_rank");
  ExpectAllOk(nonblocking, name + " ialltoall", cluster);
}

// Runs jobs of nodes 0 and `busy` alone until node 0 reaches `busy` over RC and `idle` over UD,
// and each of them agrees; returns how many jobs that took (-1: not within the deadline).
int RunUntilThePoolFollows(const TempDir& dir, Cluster& cluster, uint32_t busy, uint32_t idle, const std::string& name) {
  auto moved = [&] {
    return LinkBetween(cluster, 0, busy) == "verbs RC" && LinkBetween(cluster, busy, 0) == "verbs RC" &&
           LinkBetween(cluster, 0, idle) == "verbs UD" && LinkBetween(cluster, idle, 0) == "verbs UD";
  };
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  int jobs = 0;
  while (!moved()) {
    if (std::chrono::steady_clock::now() > end || ::testing::Test::HasFailure()) return -1;
    RunPair(dir, cluster, 0, busy, name + "-" + std::to_string(jobs++));
  }
  return jobs;
}

// rc-pool 1, planned every 300 ms, and one datagram in 9 lost on arrival (the moves' notices
// among them). Node 0 first exchanges with node 1 alone, which so takes the pool's one place at
// both (the first peer connected); then with node 2 alone, on UD at first.
// While node 2's jobs run, the pool follows the traffic: node 2 is promoted to RC and node 1,
// idle, demoted to UD, at node 0 and at the other end of each move; then traffic goes back to
// node 1 and the moves are undone. Every call (alltoall and ialltoall) is verified throughout, the moves are counted at
// both ends, and no daemon holds more than one RC queue pair per rail, by its count and the
// kernel's, once moves have settled.
TEST(VerbsDatagrams, ThePoolFollowsTheTraffic) {
  TempDir dir;
  Cluster cluster(dir, 3, Verbs({"--rc-pool", "1", "--rc-pool-interval-ms", "300", "--drop-one-datagram-in", "9"}));
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RunPair(dir, cluster, 0, 1, "first-peer");
  ASSERT_EQ(LinkBetween(cluster, 0, 1), "verbs RC") << cluster.Logs();
  ASSERT_GE(RunUntilThePoolFollows(dir, cluster, 2, 1, "to-node-2"), 1) << cluster.Logs();
  const auto t2 = QueryCounters(cluster.node(2).admin_socket()).transport_counters();
  EXPECT_GE(t2.rc_promotions(), 1u) << t2.DebugString();
  EXPECT_GT(t2.datagram_puts(), 0u) << "node 2's first calls went over UD";
  RunPair(dir, cluster, 0, 2, "on-the-new-link");
  EXPECT_GT(QueryCounters(cluster.node(2).admin_socket()).transport_counters().direct_puts(), 0u)
      << "node 2's calls after the move went over RC";
  ASSERT_GE(RunUntilThePoolFollows(dir, cluster, 1, 2, "back-to-node-1"), 1) << cluster.Logs();
  const auto t0 = QueryCounters(cluster.node(0).admin_socket()).transport_counters();
  const auto t1 = QueryCounters(cluster.node(1).admin_socket()).transport_counters();
  EXPECT_GE(t0.rc_promotions(), 2u) << t0.DebugString();
  EXPECT_GE(t0.rc_demotions(), 2u) << t0.DebugString();
  EXPECT_GE(t1.rc_demotions(), 1u) << t1.DebugString();
  EXPECT_GE(t1.rc_promotions(), 1u) << t1.DebugString();
  // Each daemon's RC queue pairs, by its count and the kernel's, once no move is under way (an
  // idle member may still leave the pool meanwhile: asked again until both agree).
  for (uint32_t i = 0; i < cluster.size(); ++i) {
    SCOPED_TRACE(cluster.name(i));
    const auto end = std::chrono::steady_clock::now() + kDeadline;
    std::string listing;
    admin::TransportCounters t;
    int kernel = -2;
    do {
      if (kernel != -2) std::this_thread::sleep_for(milliseconds(200));
      t = QueryCounters(cluster.node(i).admin_socket()).transport_counters();
      kernel = KernelQueuePairs(cluster.node(i).pid(), "RC", &listing);
    } while (kernel != static_cast<int>(t.queue_pairs()) && std::chrono::steady_clock::now() < end);
    EXPECT_EQ(kernel, static_cast<int>(t.queue_pairs())) << listing;
    EXPECT_LE(t.queue_pairs(), static_cast<uint32_t>(t.rails_size())) << t.DebugString();
  }
}

}  // namespace
}  // namespace ohio::testing
