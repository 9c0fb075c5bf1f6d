// Alltoall over the verbs transport on a real RDMA stack: runs inside the Soft-RoCE guest
// (tests/vm), where K real ohiods share the guest's rxe devices as K nodes, each using every
// active port as a rail. Real rank processes check every received byte. Shown here: every
// algorithm for 2 and 4 daemons with 1-3 ranks per node from 1 B to 4 MiB, 200 back-to-back
// calls, exactly N-1 RC queue pairs per rail per daemon (by the daemon and by the kernel), the
// first collective of a group on bounce buffers before its registration and the later ones on
// registered memory, each daemon's puts of a group on the rail nearest its ranks' NUMA node
// (from an hwloc XML), a group whose first RTR times out on an unresolved neighbour and is tried
// again, and a peer daemon killed mid-collective then back; with auth = munge (a
// munged of the test's own), queue pairs connect through authenticated ConnectQueuePairs calls.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "tests/harness/cluster.h"
#include "tests/harness/munged.h"
#include "tests/harness/rank_job.h"
#include "tests/vm/verbs_cluster_checks.h"

namespace ohio::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kDeadline = kVerbsDeadline;

admin::StatusReply Status(Cluster& c, uint32_t i) {
  StatusQuery q = QueryStatus(c.node(i).admin_socket());
  EXPECT_TRUE(q.ok) << c.name(i) << ": " << q.error;
  return q.reply;
}

// Polls until `ok` holds for node i's Status, or the deadline passes.
template <typename Pred>
bool WaitForStatus(Cluster& c, uint32_t i, Pred ok, milliseconds deadline = kDeadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    StatusQuery q = QueryStatus(c.node(i).admin_socket());
    if (q.ok && ok(q.reply)) return true;
    std::this_thread::sleep_for(milliseconds(100));
  }
  return false;
}

// Runs `command` in the background and waits at most `deadline` for it to end; false if it has
// not (it is left running, and nothing here waits for it). For commands that can block in the
// kernel beyond any signal, as `rdma link delete` does (IsolatedRxe).
bool RunShellWithin(const std::string& command, seconds deadline, std::string* out) {
  char tmpl[] = "/tmp/ohio-shell-XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd < 0) return false;
  close(fd);
  const std::string log = tmpl;
  const std::string done = log + ".done";
  const std::string line = "PATH=\"$PATH:/usr/sbin:/sbin\" sh -c '" + command + "' >" + log +
                           " 2>&1 </dev/null; touch " + done;
  if (std::system(("(" + line + ") >/dev/null 2>&1 </dev/null &").c_str()) != 0) return false;
  const auto end = std::chrono::steady_clock::now() + deadline;
  bool finished = false;
  while (!(finished = access(done.c_str(), F_OK) == 0) && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  std::ifstream in(log);
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (finished) {
    unlink(log.c_str());
    unlink(done.c_str());
  }
  return finished;
}

// A Soft-RoCE device, rxe2, on a veth pair of its own (ohio-r2a/ohio-r2b, 10.78.0.1/24) that
// reaches nothing, removed again when this goes. Deleting an rxe device blocks in the kernel,
// uninterruptibly, until every process that opened it has closed it (rxe cannot take its
// resources away from a process, so ib_uverbs waits for their files to close): a test must
// declare this before the Cluster whose daemons use rxe2, so that they are stopped first, and
// the deletion is waited for with a deadline, so that a daemon still holding rxe2 fails the test
// instead of hanging the guest.
class IsolatedRxe {
 public:
  IsolatedRxe() {
    made_ = RunShell(
        "timeout 30 ip link add ohio-r2a type veth peer name ohio-r2b && "
        "timeout 30 ip addr add 10.78.0.1/24 dev ohio-r2a && timeout 30 ip link set ohio-r2a up && "
        "timeout 30 ip link set ohio-r2b up && timeout 30 rdma link add rxe2 type rxe netdev ohio-r2a && echo made");
  }
  ~IsolatedRxe() {
    std::string out;
    if (!RunShellWithin("rdma link delete rxe2; ip link delete ohio-r2a", seconds(60), &out)) {
      std::string holders;
      RunShellWithin("timeout 10 rdma resource show pd; ls -l /proc/[0-9]*/fd 2>/dev/null | grep uverbs", seconds(15),
                     &holders);
      ADD_FAILURE() << "`rdma link delete rxe2` has not finished in 60 s: some process still has rxe2 open\n"
                    << out << holders;
    }
  }
  bool ok() const { return made_.find("made") != std::string::npos; }
  const std::string& output() const { return made_; }

 private:
  std::string made_;
};

// Every daemon runs verbs and holds exactly one RC queue pair per peer node and rail.
void ExpectQueuePairs(Cluster& c, uint32_t peers) {
  for (uint32_t i = 0; i < c.size(); ++i) {
    const admin::StatusReply s = Status(c, i);
    EXPECT_EQ(s.transport(), "verbs") << s.transport_choice();
    const uint32_t rails = static_cast<uint32_t>(s.transport_counters().rails_size());
    EXPECT_GE(rails, 1u);
    EXPECT_EQ(s.data_connections(), peers) << c.name(i) << "\n" << s.DebugString();
    EXPECT_EQ(s.transport_counters().queue_pairs(), peers * rails) << c.name(i) << "\n" << s.DebugString();
    std::string listing;
    EXPECT_EQ(KernelQueuePairs(c.node(i).pid(), "RC", &listing), static_cast<int>(peers * rails))
        << c.name(i) << " (pid " << c.node(i).pid() << ") in `rdma resource show qp`:\n" << listing;
  }
}

using Shape = std::tuple<uint32_t, uint32_t>;  // nodes, ranks per node

class VerbsAlltoall : public ::testing::TestWithParam<Shape> {};

TEST_P(VerbsAlltoall, VerifiedForEveryAlgorithm) {
  const auto [nodes, ppn] = GetParam();
  TempDir dir;
  Cluster cluster(dir, nodes, Verbs());
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  for (const char* algo : {"v1", "v2", "v3"}) {
    std::ostringstream name;
    name << "verbs-" << nodes << "x" << ppn << "-" << algo;
    // The first call may go through bounce buffers while the group's segment registers (seconds
    // under emulation); the ranks hold after it until every node has registered, so that the
    // rest are RDMA writes between registered segments whatever the guest's speed.
    const std::string go = dir.file(name.str() + ".go");
    RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(nodes, ppn), name.str(),
                {"--bytes", "1", "4097", "65536", "--iterations", "8", "--algorithm", algo, "--hold-after-first", go});
    for (uint32_t r = 0; r < job.size(); ++r) {
      ASSERT_TRUE(job.rank(r).WaitForOutput("holding", kDeadline)) << job.Outputs() << cluster.Logs();
    }
    for (uint32_t i = 0; i < nodes; ++i) {
      EXPECT_TRUE(WaitForStatus(cluster, i, [](const admin::StatusReply& s) {
        return s.transport_counters().registrations_pending() == 0 && s.transport_counters().registered_bytes() > 0;
      })) << cluster.name(i) << "\n" << Status(cluster, i).DebugString();
    }
    std::ofstream(go).put('\n');
    ExpectAllOk(job, name.str(), cluster);
  }
  ExpectQueuePairs(cluster, nodes - 1);
  for (uint32_t i = 0; i < nodes; ++i) {
    const admin::StatusReply s = Status(cluster, i);
    EXPECT_GT(s.transport_counters().direct_puts(), 0u) << cluster.name(i) << ": nothing went as an RDMA write";
    EXPECT_EQ(cluster.node(i).Stop(), 0) << cluster.Logs();
  }
}

// The guest emulates its CPUs (TCG), so every shape costs 7-40 s of the CI's time. The host's
// TCP tests run every shape (tests/integration); here the shapes that matter to the verbs path:
// one rank per node, uneven ranks per node, and more than two nodes (4 nodes x 1 is also in
// UpTo4MiBStagedAndChunked, 2 x 2 there and in the striping test).
INSTANTIATE_TEST_SUITE_P(Shapes, VerbsAlltoall, ::testing::Values(Shape{2, 1}, Shape{2, 3}, Shape{4, 2}),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "nodes_" +
                                  std::to_string(std::get<1>(info.param)) + "ppn";
                         });

// Tiny calls at 4 nodes run as a hypercube (the default inter-node table): 2 RDMA writes per node
// per call instead of 3, forwarded blocks read from the SRB, every byte checked by the ranks.
TEST(VerbsAlltoallShapes, TinyCallsRunAsAHypercube) {
  TempDir dir;
  Cluster cluster(dir, 4, Verbs());
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  std::vector<admin::CountersReply> before;
  for (uint32_t i = 0; i < 4; ++i) before.push_back(QueryCounters(cluster.node(i).admin_socket()));
  constexpr uint32_t kCalls = 100;
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(4, 2), "verbs-cube",
              {"--bytes", "64", "--iterations", std::to_string(kCalls), "--algorithm", "v3"});
  ExpectAllOk(job, "hypercube", cluster);
  for (uint32_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(cluster.name(i));
    const admin::CountersReply now = QueryCounters(cluster.node(i).admin_socket());
    EXPECT_EQ(now.collectives_served() - before[i].collectives_served(), kCalls);
    EXPECT_EQ(now.transport_counters().data_frames_sent() - before[i].transport_counters().data_frames_sent(),
              2u * kCalls);
    // Each step carries 2 blocks of 2 x 2 x 64 bytes: 4 blocks a call, one of them forwarded.
    EXPECT_EQ(now.bytes_sent() - before[i].bytes_sent(), uint64_t{kCalls} * 4 * 256);
  }
}

// Alltoallv at 4 nodes runs as a hypercube over verbs too (shm/plan/vector_cube.h): each message, its
// header line and size table (the daemon's, in the segment) and its blocks (the ranks' regions of
// the SSB, the inboxes of the SRB), goes as one RDMA write from registered memory, 2 a node and
// call; every byte checked by the ranks. A call with blocks over the cap goes again pairwise, and
// the calls after it follow alike on every node. A first job registers the group's segment, so
// that the second, of the same shape, finds it registered in the cache and bounces nothing.
TEST(VerbsAlltoallShapes, AlltoallvRunsAsAHypercubeFromRegisteredMemory) {
  TempDir dir;
  Cluster cluster(dir, 4, Verbs());
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::vector<uint32_t> placement = {0, 1, 2, 3, 0, 1, 2, 3};
  const std::string tool = "tests/tools/alltoallv_rank";
  RankJob warm(dir, ControlSockets(cluster), NodeNames(cluster), placement, "verbs-cube-v-warm",
               {"--calls", "2", "--max-bytes", "400"}, nullptr, std::nullopt, tool);
  ExpectAllOk(warm, "warm", cluster);
  for (uint32_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(WaitForStatus(cluster, i, [](const admin::StatusReply& s) {
      return s.segment_cache().cached_bytes() > 0 &&
             s.transport_counters().registered_bytes() == s.segment_cache().cached_bytes();
    })) << cluster.name(i) << ": the first group's segment is not registered and cached";
  }
  std::vector<admin::CountersReply> before;
  for (uint32_t i = 0; i < 4; ++i) before.push_back(QueryCounters(cluster.node(i).admin_socket()));
  // Calls 0-1 hypercube (2 writes), call 2 too large (2 writes of headers, then 3 pairwise),
  // call 3 pairwise (3), calls 4-5 hypercube again (2 each): 16 writes a node.
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), placement, "verbs-cube-v",
              {"--calls", "6", "--max-bytes", "400", "--seed", "3", "--large-call", "2", "--large-bytes", "20000"},
              nullptr, std::nullopt, tool);
  ExpectAllOk(job, "alltoallv hypercube", cluster);
  for (uint32_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(cluster.name(i));
    const admin::CountersReply now = QueryCounters(cluster.node(i).admin_socket());
    const auto& t = now.transport_counters();
    const auto& t0 = before[i].transport_counters();
    EXPECT_EQ(now.collectives_served() - before[i].collectives_served(), 6u);
    EXPECT_EQ(t.data_frames_sent() - t0.data_frames_sent(), 16u);
    EXPECT_EQ(t.bounce_puts() - t0.bounce_puts(), 0u);
    EXPECT_EQ(t.direct_puts() - t0.direct_puts(), 16u);
  }
}

// The direct inter-node algorithm over verbs, forced by the job (OHIO_INTERNODE_ALGORITHM travels in the joins) at 4 nodes x
// 2 with a window of 2: a node's 3 puts of a call never have more than 2 in flight (pairwise has
// all 3), eager (4 KiB) and announced (256 KiB) rounds, every byte checked by the ranks, 3 RDMA
// writes per node per call.
TEST(VerbsAlltoallShapes, DirectKeepsItsWindowOverVerbs) {
  TempDir dir;
  Cluster cluster(dir, 4, Verbs({"--direct-window", "2"}));
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  std::vector<admin::CountersReply> before;
  for (uint32_t i = 0; i < 4; ++i) before.push_back(QueryCounters(cluster.node(i).admin_socket()));
  constexpr uint32_t kCalls = 4;  // emulated CPUs: each call of 256 KiB blocks takes seconds
  setenv("OHIO_INTERNODE_ALGORITHM", "direct", 1);
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(4, 2), "verbs-direct",
              {"--bytes", "4096", "262144", "--iterations", std::to_string(kCalls), "--algorithm", "v3"});
  unsetenv("OHIO_INTERNODE_ALGORITHM");
  ExpectAllOk(job, "direct", cluster);
  for (uint32_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(cluster.name(i));
    const admin::CountersReply now = QueryCounters(cluster.node(i).admin_socket());
    EXPECT_EQ(now.collectives_served() - before[i].collectives_served(), 2 * kCalls);
    EXPECT_LE(now.puts_in_flight_peak(), 2u);
    EXPECT_GE(now.puts_in_flight_peak(), 1u);
    EXPECT_GT(now.transport_counters().direct_puts(), before[i].transport_counters().direct_puts());
    // Each call: one block of 2 x 2 x M bytes to each of the 3 other nodes.
    EXPECT_EQ(now.bytes_sent() - before[i].bytes_sent(), uint64_t{kCalls} * 3 * 4 * (4096 + 262144));
  }
}

// 1 MiB and 4 MiB per rank pair: v1/v2 staged through the SSB/SRB in several rounds, v3 in
// chunks through the SRB halves with credits.
TEST(VerbsAlltoallShapes, UpTo4MiBStagedAndChunked) {
  for (const Shape shape : {Shape{2, 2}, Shape{4, 1}}) {
    const auto [nodes, ppn] = shape;
    TempDir dir;
    Cluster cluster(dir, nodes, Verbs());
    ASSERT_TRUE(cluster.Start()) << cluster.Logs();
    for (const char* algo : {"v1", "v2", "v3"}) {
      const std::string name = "verbs-large-" + std::to_string(nodes) + "x" + std::to_string(ppn) + "-" + algo;
      RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(nodes, ppn), name,
                  {"--bytes", "1048576", "4194304", "--iterations", "2", "--algorithm", algo});
      ExpectAllOk(job, name, cluster);
    }
  }
}

// Also: `transport = auto` takes verbs when the node has active RDMA ports, and says so; and
// with auth = munge every peer call (ConnectQueuePairs among them) passes with its credential.
TEST(VerbsAlltoallShapes, TwoHundredBackToBack) {
  TempDir dir;
  Munged munged(dir, "cluster");
  ASSERT_TRUE(munged.Start()) << munged.Log();
  Cluster cluster(dir, 4, {"--transport", "auto", "--auth", "munge", "--munge-socket", munged.socket()});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  for (uint32_t i = 0; i < 4; ++i) {
    const admin::StatusReply s = Status(cluster, i);
    EXPECT_EQ(s.auth(), "munge");
    EXPECT_EQ(s.transport(), "verbs");
    EXPECT_EQ(s.transport_choice(), "transport = auto: verbs on 2 rails (rxe0:1, rxe1:1)");
  }
  for (const char* algo : {"v1", "v3"}) {
    RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(4, 2),
                std::string("verbs-200-") + algo, {"--bytes", "24", "--iterations", "200", "--algorithm", algo});
    ExpectAllOk(job, std::string("200 back to back, ") + algo, cluster);
  }
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_GE(Status(cluster, i).collectives_served(), 400u) << cluster.name(i);
    const admin::CountersReply counters = QueryCounters(cluster.node(i).admin_socket());
    EXPECT_EQ(counters.auth(), "munge");
    uint64_t refused = 0;
    for (const auto& a : counters.auth_refusals()) refused += a.count();
    EXPECT_EQ(refused, 0u) << cluster.Logs();
  }
  ExpectQueuePairs(cluster, 3);
}

// Two groups of different sizes at once (all four nodes; two of them) share the same queue
// pairs: still exactly N-1 per rail on every daemon. One rail here (--hca rxe1): N-1 in all.
TEST(VerbsCluster, OneQueuePairPerPeerAndRailWhateverTheGroups) {
  TempDir dir;
  Cluster cluster(dir, 4, Verbs({"--hca", "rxe1"}));
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RankJob all(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(4, 2), "verbs-qp-all",
              {"--bytes", "64", "4096", "--iterations", "20", "--stall-after"});
  RankJob pair(dir, {cluster.node(1).socket(), cluster.node(2).socket()}, {cluster.name(1), cluster.name(2)},
               ConsecutivePlacement(2, 3), "verbs-qp-pair", {"--bytes", "100", "--iterations", "20", "--stall-after"});
  for (RankJob* job : {&all, &pair}) {
    for (uint32_t r = 0; r < job->size(); ++r) {
      ASSERT_TRUE(job->rank(r).WaitForOutput("stalling", kDeadline)) << job->Outputs() << cluster.Logs();
    }
  }
  ExpectQueuePairs(cluster, 3);
  for (uint32_t i = 0; i < 4; ++i) {
    const admin::StatusReply s = Status(cluster, i);
    EXPECT_EQ(s.transport_counters().queue_pairs(), 3u) << cluster.name(i);
    ASSERT_EQ(s.transport_counters().rails_size(), 1);
    EXPECT_EQ(s.transport_counters().rails(0), "rxe1:1");
  }
}

uint64_t RxePacketsSent(const std::string& device) {
  std::ifstream in("/sys/class/infiniband/" + device + "/ports/1/hw_counters/sent_pkts");
  uint64_t n = 0;
  in >> n;
  return n;
}

// A 4 MiB put over two rails (the guest's rxe0 and rxe1, every daemon on both): cut into one
// stripe per rail, so each rail carries about half of the bytes, by the daemons' own counts and
// by the kernel's packet counters of the two devices; every byte is checked by the ranks.
TEST(VerbsCluster, LargePutsStripedOverBothRails) {
  TempDir dir;
  Cluster cluster(dir, 2, Verbs());
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // The first call goes through bounce buffers (one rail) while the segments register: the
  // counts start once every node has registered.
  const std::string go = dir.file("striped.go");
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 1), "verbs-striped",
              {"--bytes", "4194304", "--iterations", "5", "--algorithm", "v2", "--hold-after-first", go});
  for (uint32_t r = 0; r < job.size(); ++r) {
    ASSERT_TRUE(job.rank(r).WaitForOutput("holding", kDeadline)) << job.Outputs() << cluster.Logs();
  }
  std::vector<admin::TransportCounters> before;
  for (uint32_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(WaitForStatus(cluster, i, [](const admin::StatusReply& s) {
      return s.transport_counters().registrations_pending() == 0 && s.transport_counters().registered_bytes() > 0;
    })) << cluster.name(i);
    before.push_back(Status(cluster, i).transport_counters());
    ASSERT_EQ(before[i].rails_size(), 2) << before[i].DebugString();
    ASSERT_EQ(before[i].rail_put_bytes_size(), 2) << before[i].DebugString();
  }
  const uint64_t pkts0 = RxePacketsSent("rxe0"), pkts1 = RxePacketsSent("rxe1");
  std::ofstream(go).put('\n');
  ExpectAllOk(job, "striped", cluster);
  const uint64_t d0 = RxePacketsSent("rxe0") - pkts0, d1 = RxePacketsSent("rxe1") - pkts1;
  for (uint32_t i = 0; i < 2; ++i) {
    const admin::TransportCounters t = Status(cluster, i).transport_counters();
    // 4 calls after the first, one 4 MiB put to the other node each.
    EXPECT_EQ(t.striped_puts() - before[i].striped_puts(), 4u) << cluster.name(i) << "\n" << t.DebugString();
    const uint64_t r0 = t.rail_put_bytes(0) - before[i].rail_put_bytes(0);
    const uint64_t r1 = t.rail_put_bytes(1) - before[i].rail_put_bytes(1);
    // Each call is one eager round (a slot holds a block as large as its share of the SRB
    // half): its put is the 64-byte header and the 4 MiB block, cut at a page boundary.
    EXPECT_EQ(r0 + r1, 4u * (4194304u + 64u)) << cluster.name(i);
    // The first stripe ends at the page boundary after half the put: it carries up to a page
    // more than half, the other up to a page less.
    EXPECT_LE(r0 > r1 ? r0 - r1 : r1 - r0, 4u * 2 * 4096u)
        << cluster.name(i) << ": a put cuts into page-aligned stripes about half each";
  }
  // Packets include the other direction's acknowledgements and a few keepalives: about half each.
  ASSERT_GT(d0 + d1, 0u);
  const double share0 = static_cast<double>(d0) / static_cast<double>(d0 + d1);
  EXPECT_GT(share0, 0.4) << "rxe0 sent " << d0 << " packets, rxe1 " << d1;
  EXPECT_LT(share0, 0.6) << "rxe0 sent " << d0 << " packets, rxe1 " << d1;
}

// A group's puts take the rail nearest the NUMA node of its ranks. Every daemon
// plans from testdata/two_numa_rxe.xml (--topology-xml): rxe0 local to node 0, which holds the
// guest's CPU 0, and rxe1 to node 1, CPU 1. The first group has its rank on n0 on CPU 0 and
// its rank on n1 on CPU 1: every byte n0 puts goes on rail 0 (rxe0) and every byte n1 puts on
// rail 1, by the daemons' own counts; the second group the other way round. Each group's
// segment is region 1, then 2, on both daemons: spreading by region key (as before, and still
// for groups without a rail order) would have put both daemons' puts on rail 1 in the first
// group and on rail 0 in the second, so in each group one daemon shows the difference.
TEST(VerbsCluster, GroupsPutOnTheRailNearestTheirRanks) {
  TempDir dir;
  const std::string xml = RunfilePath("tests/vm/testdata/two_numa_rxe.xml");
  Cluster cluster(dir, 2, Verbs({"--topology-xml", xml}));
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  constexpr uint64_t kIterations = 10;
  // Each call is one eager round (v2): one put to the other node, the 64-byte header and the
  // block, below the size that is striped over both rails.
  const uint64_t put_bytes = kIterations * ((64 + 4096) + (64 + 65536));
  const std::vector<std::string> near0 = {"rxe0:1", "rxe1:1"}, near1 = {"rxe1:1", "rxe0:1"};
  for (const std::vector<uint32_t>& cpus : {std::vector<uint32_t>{0, 1}, std::vector<uint32_t>{1, 0}}) {
    const std::string name = "verbs-rail-order-" + std::to_string(cpus[0]) + std::to_string(cpus[1]);
    const std::string go = dir.file(name + ".go");
    std::vector<admin::TransportCounters> before;
    for (uint32_t i = 0; i < 2; ++i) {
      // The previous group is gone first: this one is then the only one listed.
      EXPECT_TRUE(WaitForStatus(cluster, i, [](const admin::StatusReply& s) { return s.groups() == 0; }))
          << cluster.name(i);
      before.push_back(Status(cluster, i).transport_counters());
      ASSERT_EQ(before[i].rail_put_bytes_size(), 2) << before[i].DebugString();
    }
    RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 1), name,
                {"--bytes", "4096", "65536", "--iterations", std::to_string(kIterations), "--algorithm", "v2",
                 "--hold-after-first", go},
                [&](uint32_t r) { return std::vector<std::string>{"--cpu", std::to_string(cpus[r])}; });
    for (uint32_t r = 0; r < job.size(); ++r) {
      ASSERT_TRUE(job.rank(r).WaitForOutput("holding", kDeadline)) << job.Outputs() << cluster.Logs();
    }
    for (uint32_t i = 0; i < 2; ++i) {
      const admin::StatusReply s = Status(cluster, i);
      ASSERT_EQ(s.group_size(), 1) << cluster.name(i) << "\n" << s.DebugString();
      const admin::SegmentPlacement& p = s.group(0).placement();
      ASSERT_TRUE(p.has_node()) << cluster.name(i) << ": " << p.why();
      EXPECT_EQ(p.node(), cpus[i]) << cluster.name(i) << ": " << p.why();
      EXPECT_EQ(std::vector<std::string>(p.rail_order().begin(), p.rail_order().end()), cpus[i] == 0 ? near0 : near1)
          << cluster.name(i);
    }
    std::ofstream(go).put('\n');
    ExpectAllOk(job, name, cluster);
    for (uint32_t i = 0; i < 2; ++i) {
      const admin::TransportCounters t = Status(cluster, i).transport_counters();
      const uint32_t near = cpus[i], far = 1 - cpus[i];
      EXPECT_EQ(t.rail_put_bytes(near) - before[i].rail_put_bytes(near), put_bytes)
          << cluster.name(i) << " (ranks on CPU " << cpus[i] << "): " << t.DebugString();
      EXPECT_EQ(t.rail_put_bytes(far) - before[i].rail_put_bytes(far), 0u)
          << cluster.name(i) << " (ranks on CPU " << cpus[i] << "): " << t.DebugString();
      EXPECT_EQ(t.striped_puts(), before[i].striped_puts()) << cluster.name(i);
    }
  }
}

// Node n0's second rail is a Soft-RoCE device on a veth pair of its own (rxe2, 10.78.0.1),
// which reaches nothing, while n1's second rail is rxe1: rail 1 of n0 does not reach rail 1 of
// n1. The group fails on both nodes as soon as the queue pairs are connected (not at its
// timeout, set far away), with a message naming both ends of that rail and what to fix.
TEST(VerbsCluster, RailThatDoesNotReachItsPeerRailIsNamed) {
  IsolatedRxe rxe2;  // first, so that it goes last: after the daemons that opened it have stopped
  ASSERT_TRUE(rxe2.ok()) << rxe2.output();
  TempDir dir;
  Cluster cluster(dir, 2, Verbs({"--timeout-ms", "120000"}));  // the failure, not the timeout, must end it
  cluster.AddFlags(0, {"--hca", "rxe0", "--hca", "rxe2"});
  cluster.AddFlags(1, {"--hca", "rxe0", "--hca", "rxe1"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 1), "verbs-misrailed",
              {"--bytes", "4096", "--iterations", "1000000", "--expect", "group failed"});
  auto codes = job.Wait(kDeadline);
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_EQ(codes[r], 0) << job.Outputs() << cluster.Logs();
  }
  // Whichever end found it (a queue pair that would not connect, or sends never acknowledged),
  // both ranks are told which rails of which nodes do not meet.
  for (uint32_t r = 0; r < job.size(); ++r) {
    const std::string out = job.rank(r).Output();
    EXPECT_TRUE(Contains(out, "alltoall error code=7 (group failed)")) << out;
    // The rail never came up: not "lost the connection". Told by its own node (naming the
    // other) or relayed from the other node (naming this one, after "has failed on node n<other>").
    const std::string other = "n" + std::to_string(1 - r), self = "n" + std::to_string(r);
    EXPECT_TRUE(Contains(out, "the data connection to node " + other + "'s ohiod never came up (") ||
                Contains(out, "has failed on node " + other + ": the data connection to node " + self +
                                  "'s ohiod never came up ("))
        << out;
    EXPECT_FALSE(Contains(out, "lost the connection")) << out;
    EXPECT_TRUE(Contains(out, "cannot reach rail 1 of node")) << job.Outputs() << cluster.Logs();
    EXPECT_TRUE(Contains(out, "(rxe1:1, GID ") && Contains(out, "(rxe2:1, GID ")) << out;  // both ends named
    EXPECT_TRUE(Contains(out, "list the same HCAs in the same order")) << out;
  }
}

// The guest's two IPv4 neighbour entries (10.77.0.2 on veth0, 10.77.0.1 on veth1, permanent:
// tests/vm/rxe_guest.sh) removed, and neither end answering ARP (arp_ignore = 8), until
// Restore() or the end: a queue pair's RTR over the IPv4 GIDs (index 1) between rxe0 and rxe1
// then waits the kernel's second for the peer's MAC and fails with ETIMEDOUT, as on a fabric
// whose neighbour is not resolved yet. Restored, a resolution under way completes at once (the
// kernel retries on the neighbour update).
class UnresolvedNeighbours {
 public:
  UnresolvedNeighbours() {
    output_ = RunShell(
        "sysctl -qw net.ipv4.conf.veth0.arp_ignore=8 net.ipv4.conf.veth1.arp_ignore=8 && "
        "ip neigh del 10.77.0.2 dev veth0 && ip neigh del 10.77.0.1 dev veth1 && echo unresolved");
  }
  ~UnresolvedNeighbours() { Restore(); }
  bool ok() const { return Contains(output_, "unresolved"); }
  const std::string& output() const { return output_; }
  // True if the entries are back.
  bool Restore() {
    if (restored_) return true;
    const std::string out = RunShell(
        "sysctl -qw net.ipv4.conf.veth0.arp_ignore=0 net.ipv4.conf.veth1.arp_ignore=0 && "
        "ip neigh replace 10.77.0.2 lladdr $(cat /sys/class/net/veth1/address) dev veth0 nud permanent && "
        "ip neigh replace 10.77.0.1 lladdr $(cat /sys/class/net/veth0/address) dev veth1 nud permanent && "
        "echo restored");
    restored_ = Contains(out, "restored");
    output_ += out;
    return restored_;
  }

 private:
  std::string output_;
  bool restored_ = false;
};

uint64_t RtrRetries(Cluster& c) {
  uint64_t n = 0;
  for (uint32_t i = 0; i < c.size(); ++i) n += QueryCounters(c.node(i).admin_socket()).transport_counters().rtr_retries();
  return n;
}

// A group whose nodes' addresses are not resolved yet when it connects their queue pairs: n0 on
// rxe0 and n1 on rxe1, so that the rail crosses the veth pair, over the IPv4 GIDs, with the
// neighbours unresolved (UnresolvedNeighbours). The first RTR times out; once a daemon has
// counted that retry the neighbours come back, the next attempt passes within the transport's
// budget, and the group runs with every byte checked by the ranks. Without the retry the group
// failed at the first timeout ("never came up").
TEST(VerbsCluster, RtrTriedAgainUntilThePeersAddressResolves) {
  UnresolvedNeighbours neighbours;
  ASSERT_TRUE(neighbours.ok()) << neighbours.output();
  TempDir dir;
  Cluster cluster(dir, 2, Verbs({"--gid-index", "1"}));
  cluster.AddFlags(0, {"--hca", "rxe0"});
  cluster.AddFlags(1, {"--hca", "rxe1"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  ASSERT_EQ(RtrRetries(cluster), 0u);
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 2), "verbs-unresolved",
              {"--bytes", "1", "4096", "65536", "--iterations", "5"});
  // The kernel fails the first attempt after a second; the transport tries again for about 5 s.
  // A rank that ended already means the group failed: no use waiting for a retry then.
  auto ranks_running = [&job] {
    for (uint32_t r = 0; r < job.size(); ++r) {
      if (!job.rank(r).Running()) return false;
    }
    return true;
  };
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  uint64_t retries = 0;
  while ((retries = RtrRetries(cluster)) == 0 && ranks_running() && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_TRUE(neighbours.Restore()) << neighbours.output();
  ASSERT_GE(retries, 1u) << "no RTR was tried again\n" << job.Outputs() << cluster.Logs();
  ExpectAllOk(job, "a group whose first RTR timed out", cluster);
  for (uint32_t i = 0; i < 2; ++i) {
    const admin::StatusReply s = Status(cluster, i);
    EXPECT_EQ(s.data_connections(), 1u) << cluster.name(i) << "\n" << s.DebugString();
    EXPECT_EQ(s.collectives_served(), 5u * 3) << cluster.name(i);  // 5 calls of each of 3 sizes
  }
  EXPECT_GE(RtrRetries(cluster), retries);
  const std::string logs = cluster.Logs();
  EXPECT_TRUE(Contains(logs, "not ready to receive, attempt 1: Connection timed out; trying again in 100 ms"))
      << logs;
  EXPECT_FALSE(Contains(logs, "never came up")) << logs;
}

// rtr-retry-budget-ms 0: one attempt. With the neighbours unresolved as above, the first RTR
// times out (the kernel's second) and is not tried again: no retry is counted, and the group
// fails at connect (its timeout set far away), every rank told the rail never came up because
// the queue pair's RTR timed out. With the default budget the same start is retried until it
// passes (the test above).
TEST(VerbsCluster, RtrRetryBudgetZeroTriesOnce) {
  UnresolvedNeighbours neighbours;
  ASSERT_TRUE(neighbours.ok()) << neighbours.output();
  TempDir dir;
  Cluster cluster(dir, 2, Verbs({"--gid-index", "1", "--rtr-retry-budget-ms", "0", "--timeout-ms", "120000"}));
  cluster.AddFlags(0, {"--hca", "rxe0"});
  cluster.AddFlags(1, {"--hca", "rxe1"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 1), "verbs-rtr-once",
              {"--bytes", "4096", "--iterations", "1000000", "--expect", "group failed"});
  auto codes = job.Wait(kDeadline);
  ASSERT_TRUE(neighbours.Restore()) << neighbours.output();
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_EQ(codes[r], 0) << job.Outputs() << cluster.Logs();
    const std::string out = job.rank(r).Output();
    EXPECT_TRUE(Contains(out, "alltoall error code=7 (group failed)")) << out;
    EXPECT_TRUE(Contains(out, "never came up (")) << out;
  }
  EXPECT_EQ(RtrRetries(cluster), 0u) << cluster.Logs();
  const std::string logs = cluster.Logs();
  EXPECT_TRUE(Contains(logs, "to RTR on ")) << logs;
  EXPECT_TRUE(Contains(logs, "Connection timed out")) << logs;
  EXPECT_FALSE(Contains(logs, "trying again in")) << logs;
}

// Registration is held back 5 s: the group's first collective cannot wait for it and goes
// through bounce buffers; once the segments are registered, the rest are RDMA writes. When the
// group ends its registered segment is cached (parked once the peer acknowledged), and a second
// group of the same uid and sizes takes it: no ibv_reg_mr at all, RDMA writes, every byte right.
TEST(VerbsCluster, FirstCollectiveOnBounceBuffersThenRegisteredThenReused) {
  TempDir dir;
  Cluster cluster(dir, 2, Verbs({"--registration-delay-ms", "5000"}));
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 2), "verbs-bounce",
              {"--bytes", "100000", "--iterations", "10", "--pause-after-first-ms", "9000"});
  for (uint32_t r = 0; r < job.size(); ++r) {
    ASSERT_TRUE(job.rank(r).WaitForOutput("paused", kDeadline)) << job.Outputs() << cluster.Logs();
  }
  for (uint32_t i = 0; i < 2; ++i) {
    const admin::TransportCounters t = Status(cluster, i).transport_counters();
    EXPECT_EQ(t.registrations(), 0u) << cluster.name(i) << ": registered before the first collective was done";
    EXPECT_GE(t.registrations_pending(), 1u) << cluster.name(i);
    EXPECT_GE(t.bounce_puts(), 1u) << cluster.name(i) << ": the first collective did not use bounce buffers";
    EXPECT_EQ(t.direct_puts(), 0u) << cluster.name(i);
  }
  ExpectAllOk(job, "bounce then registered", cluster);
  std::vector<uint64_t> direct(2);
  for (uint32_t i = 0; i < 2; ++i) {
    const admin::TransportCounters t = Status(cluster, i).transport_counters();
    EXPECT_EQ(t.registrations(), 1u) << cluster.name(i);
    EXPECT_GE(t.direct_puts(), 9u) << cluster.name(i) << ": later collectives did not use registered memory";
  }
  // The group is gone: its segment stays registered, cached, once the peer acknowledged that
  // nothing more of the group is on its way.
  for (uint32_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(WaitForStatus(cluster, i, [](const admin::StatusReply& s) {
      return s.groups() == 0 && s.segment_cache().cached_segments() == 1 &&
             s.transport_counters().deregistrations() == 0 &&
             s.transport_counters().registered_bytes() == s.segment_cache().cached_bytes();
    })) << cluster.name(i) << "\n" << Status(cluster, i).DebugString();
    direct[i] = Status(cluster, i).transport_counters().direct_puts();
  }
  RankJob again(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 2), "verbs-reused",
                {"--bytes", "1", "100000", "--iterations", "10"});
  ExpectAllOk(again, "a second group on the cached registration", cluster);
  for (uint32_t i = 0; i < 2; ++i) {
    const admin::StatusReply s = Status(cluster, i);
    EXPECT_EQ(s.transport_counters().registrations(), 1u) << cluster.name(i) << ": the second group registered";
    EXPECT_EQ(s.segment_cache().hits(), 1u) << cluster.name(i) << "\n" << s.DebugString();
    EXPECT_GE(s.transport_counters().direct_puts(), direct[i] + 10) << cluster.name(i);
  }
}

// A peer daemon SIGKILLed while collectives flow: the other nodes' ranks get a clear error (the
// queue pair to it fails), nobody hangs; the node comes back and new groups work over verbs.
TEST(VerbsCluster, PeerDaemonKilledMidCollectiveThenBack) {
  TempDir dir;
  // The group timeout is far away: the loss must be noticed from the queue pairs.
  Cluster cluster(dir, 3, Verbs({"--timeout-ms", "120000"}));
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(3, 2), "verbs-peer-killed",
              {"--bytes", "4096", "--iterations", "100000000"}, [](uint32_t r) {
                return std::vector<std::string>{"--expect", r / 2 == 2 ? "daemon connection lost" : "group failed"};
              });
  for (uint32_t r = 0; r < job.size(); ++r) ASSERT_TRUE(job.rank(r).WaitForOutput("joined", kDeadline)) << job.Outputs();
  ASSERT_TRUE(WaitForStatus(cluster, 0, [](const admin::StatusReply& s) { return s.collectives_served() >= 20; }))
      << cluster.Logs();
  cluster.node(2).Kill();
  auto codes = job.Wait(seconds(60));
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_EQ(codes[r], 0) << job.Outputs() << cluster.Logs();
    if (r / 2 != 2) {
      EXPECT_TRUE(Contains(job.rank(r).Output(), "lost the connection to node n2")) << job.rank(r).Output();
    }
  }
  ASSERT_TRUE(cluster.StartNode(2)) << cluster.Logs();
  RankJob again(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(3, 2), "verbs-after-restart",
                {"--bytes", "1", "65536", "--iterations", "50", "--stall-after"});
  for (uint32_t r = 0; r < again.size(); ++r) {
    ASSERT_TRUE(again.rank(r).WaitForOutput("stalling", kDeadline)) << again.Outputs() << cluster.Logs();
  }
  ExpectQueuePairs(cluster, 2);
}

}  // namespace
}  // namespace ohio::testing
