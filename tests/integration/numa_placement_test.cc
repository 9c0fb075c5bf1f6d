// NUMA placement of a group's segment with a real ohiod and real rank processes
// pinned to CPUs: what ohiod reports (admin Status, ohioctl groups) against what the kernel
// holds (/proc/PID/numa_maps of the daemon's and a rank's mapping of the segment), and every
// byte of the alltoalls checked by the ranks. This machine has one NUMA node; a second daemon
// plans from a 2-node hwloc XML file (--topology-xml) and must say that this machine refused
// the node it chose.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "proto/admin.pb.h"
#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/rank_job.h"

namespace ohio::testing {
namespace {

using std::chrono::seconds;

constexpr auto kDeadline = seconds(120);
constexpr uint32_t kRanks = 2;
const std::vector<std::string> kSizes = {"4096", "65536"};

// The line of /proc/PID/numa_maps for the group's segment (its memfd is named after the key).
std::string SegmentNumaMap(pid_t pid, const std::string& job) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/numa_maps");
  const std::string name = "memfd:ohio-group-" + KeyHex(job).substr(0, 8);
  for (std::string line; std::getline(in, line);) {
    if (line.find(name) != std::string::npos) return line;
  }
  return "";
}

std::string GroupsText(const TempDir& dir, const Daemon& d, const std::string& job) {
  Process p({RunfilePath("client/ohioctl"), "--socket", d.admin_socket(), "groups"}, dir.file(job + ".ctl"));
  EXPECT_EQ(p.Wait(seconds(30)), 0) << p.Output();
  return p.Output();
}

// A job of kRanks ranks, rank r pinned to cpus[r], held after its first alltoall so that the
// group can be looked at; `look` runs then, and the job finishes with every byte checked.
void RunPinned(const TempDir& dir, const Daemon& d, const std::string& job, const std::vector<int>& cpus,
               const std::function<void(const admin::GroupSummary&, pid_t rank0)>& look) {
  const std::string hold = dir.file(job + ".go");
  std::vector<std::string> args = {"--bytes"};
  args.insert(args.end(), kSizes.begin(), kSizes.end());
  args.insert(args.end(), {"--iterations", "20", "--hold-after-first", hold});
  RankJob ranks(dir, d.socket(), job, kRanks, args,
                [&](uint32_t r) { return std::vector<std::string>{"--cpu", std::to_string(cpus[r])}; });
  for (uint32_t r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(ranks.rank(r).WaitForOutput("holding", kDeadline)) << ranks.Outputs() << d.Log();
  }
  const StatusQuery q = QueryStatus(d.admin_socket());
  ASSERT_TRUE(q.ok) << q.error;
  ASSERT_EQ(q.reply.group_size(), 1);
  look(q.reply.group(0), ranks.rank(0).pid());
  std::ofstream(hold) << "go";
  const auto codes = ranks.Wait(kDeadline);
  for (uint32_t r = 0; r < kRanks; ++r) {
    EXPECT_EQ(codes[r], 0) << ranks.Outputs();
    for (const std::string& m : kSizes) {
      EXPECT_NE(ranks.rank(r).Output().find("ok bytes=" + m + " iterations=20"), std::string::npos) << ranks.Outputs();
    }
  }
}

// The admin Counters (and so the metrics) of segments bound and refused.
void ExpectNumaCounts(const Daemon& d, uint64_t bound, uint64_t refused) {
  const admin::CountersReply c = QueryCounters(d.admin_socket());
  EXPECT_EQ(c.segments_numa_bound(), bound);
  EXPECT_EQ(c.segments_numa_refused(), refused);
}

TEST(NumaPlacement, ThisMachinesOneNodeIsChosenAndBound) {
  TempDir dir;
  Daemon daemon(dir, {"--transport", "tcp"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const std::string job = "numa-here";
  RunPinned(dir, daemon, job, {0, 1}, [&](const admin::GroupSummary& g, pid_t rank0) {
    const admin::SegmentPlacement& p = g.placement();
    EXPECT_TRUE(p.decided());
    ASSERT_TRUE(p.has_node());
    EXPECT_EQ(p.node(), 0u);
    EXPECT_TRUE(p.bound()) << p.bind_error();
    EXPECT_EQ(p.bind_error(), "");
    EXPECT_EQ(p.why(), "one NUMA node (the ranks' allowed CPUs: 2 on node 0)");
    EXPECT_EQ(p.rail_order_size(), 0);  // tcp: no rails
    // Bound without a policy: on a host with one node every page is on it, and ohiod spares the
    // join the mbind (it moves pages, draining every CPU's lists). The pages touched so far, the
    // daemon's and the rank's, are on node 0. (The XML test below sees the policy set.)
    for (pid_t pid : {daemon.pid(), rank0}) {
      const std::string line = SegmentNumaMap(pid, job);
      EXPECT_NE(line.find(" default "), std::string::npos) << pid << ": " << line;
      EXPECT_NE(line.find(" N0="), std::string::npos) << pid << ": " << line;
    }
    const std::string text = GroupsText(dir, daemon, job);
    EXPECT_NE(text.find(g.key() + ": NUMA 0 (one NUMA node (the ranks' allowed CPUs: 2 on node 0)); rails none"),
              std::string::npos)
        << text;
  });
  ExpectNumaCounts(daemon, 1, 0);
  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
}

// Planned for the XML file's machine (node 0: CPUs 0,2; node 1: CPUs 1,3), bound on this one.
TEST(NumaPlacement, XmlTopologyChoosesTheRanksNodeAndReportsARefusedBind) {
  TempDir dir;
  const std::string xml = RunfilePath("tests/unit/testdata/two_numa_two_hcas.xml");
  Daemon daemon(dir, {"--transport", "tcp", "--topology-xml", xml});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  EXPECT_NE(daemon.Log().find("NUMA placement from hwloc XML file " + xml + ": node(s) 0: CPUs 0,2, 1: CPUs 1,3"),
            std::string::npos)
      << daemon.Log();

  const std::string on1 = "numa-xml-node1";
  RunPinned(dir, daemon, on1, {1, 1}, [&](const admin::GroupSummary& g, pid_t) {
    const admin::SegmentPlacement& p = g.placement();
    ASSERT_TRUE(p.has_node());
    EXPECT_EQ(p.node(), 1u);
    EXPECT_EQ(p.why(), "the ranks' allowed CPUs: 0 on node 0, 2 on node 1");
    EXPECT_FALSE(p.bound());
    EXPECT_EQ(p.bind_error(), "mbind(MPOL_PREFERRED, node 1): Invalid argument; this machine has no NUMA node 1");
    EXPECT_NE(SegmentNumaMap(daemon.pid(), on1).find(" default "), std::string::npos)
        << SegmentNumaMap(daemon.pid(), on1);
    const std::string text = GroupsText(dir, daemon, on1);
    EXPECT_NE(text.find("1 NOT BOUND"), std::string::npos) << text;
    EXPECT_NE(text.find(g.key() + ": NUMA 1 NOT BOUND (the ranks' allowed CPUs: 0 on node 0, 2 on node 1): "
                                  "mbind(MPOL_PREFERRED, node 1): Invalid argument; this machine has no NUMA node 1"),
              std::string::npos)
        << text;
  });
  EXPECT_NE(daemon.Log().find("NUMA node 1 chosen for the segment"), std::string::npos) << daemon.Log();

  // Node 0 of the file is node 0 here too: chosen and bound.
  const std::string on0 = "numa-xml-node0";
  RunPinned(dir, daemon, on0, {0, 0}, [&](const admin::GroupSummary& g, pid_t) {
    const admin::SegmentPlacement& p = g.placement();
    ASSERT_TRUE(p.has_node());
    EXPECT_EQ(p.node(), 0u);
    EXPECT_TRUE(p.bound()) << p.bind_error();
    EXPECT_NE(SegmentNumaMap(daemon.pid(), on0).find(" prefer:0 "), std::string::npos)
        << SegmentNumaMap(daemon.pid(), on0);
  });

  // One rank on each node: no preference, nothing bound.
  RunPinned(dir, daemon, "numa-xml-spread", {0, 1}, [&](const admin::GroupSummary& g, pid_t) {
    EXPECT_TRUE(g.placement().decided());
    EXPECT_FALSE(g.placement().has_node());
    EXPECT_FALSE(g.placement().bound());
    EXPECT_EQ(g.placement().why(), "no node holds more of the ranks' CPUs than another (the ranks' allowed CPUs: "
                                   "1 on node 0, 1 on node 1)");
  });
  // Node 1 refused, node 0 bound, the spread group neither.
  ExpectNumaCounts(daemon, 1, 1);
  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
}

TEST(NumaPlacement, UnreadableTopologyXmlStopsTheDaemon) {
  TempDir dir;
  Daemon daemon(dir, {"--transport", "tcp", "--topology-xml", dir.file("missing.xml")});
  EXPECT_FALSE(daemon.Start());
  EXPECT_NE(daemon.Log().find("topology-xml: hwloc cannot read topology XML " + dir.file("missing.xml")),
            std::string::npos)
      << daemon.Log();
}

}  // namespace
}  // namespace ohio::testing
