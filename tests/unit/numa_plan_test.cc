// NUMA placement of a group's segment and the order of its rails (shm/placement/numa_plan.h), planned on
// topologies hwloc loads from XML (daemon/host/numa_topology.h): testdata/two_numa_two_hcas.xml has
// node 0 = PUs 0,2 with mlx5_0 and node 1 = PUs 1,3 with mlx5_1.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "daemon/host/numa_topology.h"
#include "shm/placement/numa_plan.h"

namespace ohio {
namespace {

using Rails = std::vector<std::string>;

std::string TestData(const std::string& name) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return std::string(srcdir ? srcdir : ".") + "/" + (workspace ? workspace : "ohio") + "/tests/unit/testdata/" + name;
}

NumaTopology TwoNodes(const Rails& rails) {
  auto t = LoadNumaTopology(TestData("two_numa_two_hcas.xml"), rails, nullptr);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? t.value() : NumaTopology{};
}

NumaPlacement Plan(const NumaTopology& t, const std::vector<CpuList>& ranks) {
  return PlanNumaPlacement(t.nodes, ranks, t.rails);
}

TEST(NumaTopologyXml, NodesAndRailLocality) {
  const NumaTopology t = TwoNodes({"mlx5_1:1", "rxe0:1", "mlx5_0:1"});
  ASSERT_EQ(t.nodes.size(), 2u);
  EXPECT_EQ(t.nodes[0].os_index, 0u);
  EXPECT_EQ(t.nodes[0].cpus, (CpuList{0, 2}));
  EXPECT_EQ(t.nodes[1].os_index, 1u);
  EXPECT_EQ(t.nodes[1].cpus, (CpuList{1, 3}));
  ASSERT_EQ(t.rails.size(), 3u);
  EXPECT_EQ(t.rails[0].name, "mlx5_1:1");
  EXPECT_EQ(t.rails[0].cpus, (CpuList{1, 3}));
  EXPECT_EQ(t.rails[1].name, "rxe0:1");  // not in the topology: Soft-RoCE has no PCI device
  EXPECT_TRUE(t.rails[1].cpus.empty());
  EXPECT_EQ(t.rails[2].cpus, (CpuList{0, 2}));
  EXPECT_NE(t.source.find("two_numa_two_hcas.xml"), std::string::npos) << t.source;
}

TEST(NumaTopologyXml, UnreadableFileIsAnError) {
  auto t = LoadNumaTopology(TestData("no_such_topology.xml"), {}, nullptr);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("hwloc cannot read topology XML"), std::string::npos) << t.status().message();
}

TEST(NumaPlan, RanksPinnedToOneNodeChooseItAndItsRailFirst) {
  const NumaTopology t = TwoNodes({"mlx5_0", "mlx5_1"});
  const NumaPlacement on1 = Plan(t, {{1}, {3}, {1}});
  ASSERT_TRUE(on1.node.has_value());
  EXPECT_EQ(*on1.node, 1u);
  EXPECT_EQ(on1.rail_order, (Rails{"mlx5_1", "mlx5_0"}));
  EXPECT_EQ(on1.rail_tiers, (RailTiers{{1}, {0}}));  // rail 1 (mlx5_1) alone nearest
  EXPECT_EQ(on1.why, "the ranks' allowed CPUs: 0 on node 0, 3 on node 1");
  const NumaPlacement on0 = Plan(t, {{0}, {2}});
  ASSERT_TRUE(on0.node.has_value());
  EXPECT_EQ(*on0.node, 0u);
  EXPECT_EQ(on0.rail_order, (Rails{"mlx5_0", "mlx5_1"}));
  EXPECT_EQ(on0.rail_tiers, (RailTiers{{0}, {1}}));
}

TEST(NumaPlan, MostCpusWinsAndUnpinnedRanksWeighAlike) {
  const NumaTopology t = TwoNodes({"mlx5_0", "mlx5_1"});
  // Two unpinned ranks add 2 CPUs to each node; the pinned one decides.
  const NumaPlacement p = Plan(t, {{0, 1, 2, 3}, {0, 1, 2, 3}, {3}});
  ASSERT_TRUE(p.node.has_value());
  EXPECT_EQ(*p.node, 1u);
  // A rank allowed both CPUs of node 0 outweighs one on node 1.
  const NumaPlacement q = Plan(t, {{0, 2}, {1}});
  ASSERT_TRUE(q.node.has_value());
  EXPECT_EQ(*q.node, 0u);
}

TEST(NumaPlan, SpreadOverEveryNodeIsNoPreferenceAndKeepsTheConfiguredRailOrder) {
  const NumaTopology t = TwoNodes({"mlx5_1", "mlx5_0"});
  for (const std::vector<CpuList>& ranks :
       {std::vector<CpuList>{{0}, {1}}, std::vector<CpuList>{{0, 1, 2, 3}}, std::vector<CpuList>{{0, 1}, {2, 3}},
        std::vector<CpuList>{}, std::vector<CpuList>{{}, {}}}) {
    const NumaPlacement p = Plan(t, ranks);
    EXPECT_FALSE(p.node.has_value()) << *p.node;
    EXPECT_EQ(p.rail_order, (Rails{"mlx5_1", "mlx5_0"}));
    EXPECT_TRUE(p.rail_tiers.empty());  // the transport spreads such groups as before
    EXPECT_EQ(p.why.rfind("no node holds more of the ranks' CPUs than another (", 0), 0u) << p.why;
  }
}

TEST(NumaPlan, TiesAmongSomeNodesGoToTheLowest) {
  // Three nodes, listed out of order; the ranks are on nodes 2 and 1 alike, none on node 0.
  const std::vector<NumaNodeCpus> nodes = {{2, {4, 5}}, {0, {0, 1}}, {1, {2, 3}}};
  const NumaPlacement p = PlanNumaPlacement(nodes, {{4}, {2}}, {});
  ASSERT_TRUE(p.node.has_value());
  EXPECT_EQ(*p.node, 1u);
  EXPECT_EQ(p.why, "the ranks' allowed CPUs: 1 on node 2, 0 on node 0, 1 on node 1");
}

TEST(NumaPlan, RailsWithoutLocalityGoAfterTheLocalOnesBeforeTheRemote) {
  const NumaTopology t = TwoNodes({"mlx5_1:1", "rxe0:1", "mlx5_0:1", "rxe1:1", "mlx5_0:2"});
  const NumaPlacement p = Plan(t, {{0}});
  ASSERT_TRUE(p.node.has_value());
  EXPECT_EQ(*p.node, 0u);
  EXPECT_EQ(p.rail_order, (Rails{"mlx5_0:1", "mlx5_0:2", "rxe0:1", "rxe1:1", "mlx5_1:1"}));
  // Indices of the rails as given: the two local ports, the two Soft-RoCE, the remote one.
  EXPECT_EQ(p.rail_tiers, (RailTiers{{2, 4}, {1, 3}, {0}}));
}

TEST(NumaPlan, OneNodeIsAlwaysChosen) {
  const std::vector<NumaNodeCpus> one = {{0, {0, 1}}};
  for (const std::vector<CpuList>& ranks : {std::vector<CpuList>{{1}}, std::vector<CpuList>{{0, 1}, {0, 1}}}) {
    const NumaPlacement p = PlanNumaPlacement(one, ranks, {{"rxe0:1", {}}});
    ASSERT_TRUE(p.node.has_value());
    EXPECT_EQ(*p.node, 0u);
    EXPECT_EQ(p.why.rfind("one NUMA node (", 0), 0u) << p.why;
    EXPECT_EQ(p.rail_order, (Rails{"rxe0:1"}));
    EXPECT_EQ(p.rail_tiers, (RailTiers{{0}}));
  }
}

TEST(NumaPlan, NoNodeKnown) {
  const NumaPlacement p = PlanNumaPlacement({}, {{0}}, {{"mlx5_0:1", {0}}});
  EXPECT_FALSE(p.node.has_value());
  EXPECT_EQ(p.why, "hwloc knows no NUMA node");
  EXPECT_EQ(p.rail_order, (Rails{"mlx5_0:1"}));
  EXPECT_TRUE(p.rail_tiers.empty());
}

TEST(CpuListText, RangesAndSingles) {
  EXPECT_EQ(CpuListText({}), "");
  EXPECT_EQ(CpuListText({3}), "3");
  EXPECT_EQ(CpuListText({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
}

}  // namespace
}  // namespace ohio
