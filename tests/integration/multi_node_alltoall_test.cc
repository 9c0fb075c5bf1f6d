// Alltoall across nodes: K real ohiods on loopback as K nodes, real rank processes on each,
// every received byte checked by the ranks, for every algorithm, node count and ranks per node,
// uneven and interleaved placements, and sizes that need staging and v3 chunking.
#include <gtest/gtest.h>

#include <sstream>
#include <tuple>

#include "shm/plan/exchange_plan.h"
#include "shm/plan/group_shape.h"
#include "shm/plan/staging.h"
#include "tests/harness/cluster.h"
#include "tests/harness/rank_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(280);

void ExpectAllOk(RankJob& job, const std::string& context, Cluster& cluster) {
  auto codes = job.Wait(kDeadline);
  bool all = true;
  for (int c : codes) all &= c == 0;
  EXPECT_TRUE(all) << context << "\n" << job.Outputs() << cluster.Logs();
}

using Shape = std::tuple<uint32_t, uint32_t>;  // nodes, ranks per node

class MultiNodeAlltoall : public ::testing::TestWithParam<Shape> {};

// Every algorithm on this shape, 1 B to 64 KiB, back to back.
TEST_P(MultiNodeAlltoall, VerifiedForEveryDesign) {
  const auto [nodes, ppn] = GetParam();
  TempDir dir;
  Cluster cluster(dir, nodes);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  for (const char* algo : {"v1", "v2", "v3"}) {
    std::ostringstream name;
    name << "matrix-" << nodes << "x" << ppn << "-" << algo;
    RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(nodes, ppn), name.str(),
                {"--bytes", "1", "7", "4096", "65536", "--iterations", "40", "--algorithm", algo});
    ExpectAllOk(job, name.str(), cluster);
  }
  for (uint32_t i = 0; i < nodes; ++i) EXPECT_EQ(cluster.node(i).Stop(), 0) << cluster.Logs();
}

INSTANTIATE_TEST_SUITE_P(Shapes, MultiNodeAlltoall,
                         ::testing::Combine(::testing::Values(2u, 3u, 4u, 5u), ::testing::Values(1u, 2u, 4u)),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "nodes_" +
                                  std::to_string(std::get<1>(info.param)) + "ppn";
                         });

TEST(MultiNodeAlltoallShapes, UnevenAndInterleavedPlacements) {
  TempDir dir;
  Cluster cluster(dir, 3);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // 3 + 1 + 2 ranks, consecutive; then the same counts interleaved, so that v1 rows break
  // into several runs and blocks gather ranks that are not neighbours.
  const std::vector<std::vector<uint32_t>> placements = {{0, 0, 0, 1, 2, 2}, {0, 2, 1, 0, 2, 0}};
  for (size_t p = 0; p < placements.size(); ++p) {
    for (const char* algo : {"v1", "v2", "v3"}) {
      const std::string name = "uneven" + std::to_string(p) + "-" + algo;
      RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), placements[p], name,
                  {"--bytes", "1", "100", "65536", "--iterations", "50", "--algorithm", algo});
      ExpectAllOk(job, name, cluster);
    }
  }
}

TEST(MultiNodeAlltoallShapes, ThousandBackToBackCalls) {
  TempDir dir;
  Cluster cluster(dir, 4);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  for (const char* algo : {"v1", "v2", "v3"}) {
    const std::string name = std::string("thousand-") + algo;
    RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(4, 2), name,
                {"--bytes", "1", "1024", "--iterations", "1000", "--algorithm", algo});
    ExpectAllOk(job, name, cluster);
  }
}

// A small SSB and SRB: 4 MiB per rank needs several staging rounds, and v3 blocks go in
// several chunks through the two halves.
TEST(MultiNodeAlltoallShapes, StagedAndChunkedUpTo4MiB) {
  TempDir dir;
  Cluster cluster(dir, 3, {"--ssb-bytes", "4MiB", "--srb-bytes", "1MiB"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  for (const char* algo : {"v1", "v2", "v3"}) {
    const std::string name = std::string("staged-") + algo;
    RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), {0, 0, 1, 1, 2, 2}, name,
                {"--bytes", "1000000", "4194304", "--iterations", "4", "--algorithm", algo});
    ExpectAllOk(job, name, cluster);
  }
}

// SSBs so small that every message's slice would be shorter than ohiod's minimum (24 KiB over
// 2 x 6 messages: 2 KiB): rounds carry some rows to some nodes instead, slices of at least
// 4 KiB. Consecutive 2 + 2 + 2 ranks cut the nodes a round reaches; interleaved 3 + 1 + 2 cut
// the rows too. Every byte is checked by the ranks, and every node counts the rounds the plan
// says (the ranks and the daemons planned the same cut, or the calls would not complete).
TEST(MultiNodeAlltoallShapes, StagedInSlicesOfAtLeastTheMinimum) {
  constexpr uint64_t kSsb = 24 << 10, kSrb = 16 << 10, kBytes = 100000;
  constexpr uint32_t kCalls = 3;
  TempDir dir;
  Cluster cluster(dir, 3, {"--ssb-bytes", "24KiB", "--srb-bytes", "16KiB"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::vector<std::vector<uint32_t>> placements = {{0, 0, 1, 1, 2, 2}, {0, 2, 1, 0, 2, 0}};
  for (size_t p = 0; p < placements.size(); ++p) {
    for (const NodeLevelDesign algo : {NodeLevelDesign::kV1, NodeLevelDesign::kV2, NodeLevelDesign::kV3}) {
      const std::string name = "sliced" + std::to_string(p) + "-" + NodeLevelDesignName(algo);
      const Result<GroupShape> shape = GroupShape::Make(3, placements[p]);
      ASSERT_TRUE(shape.ok()) << shape.status().message();
      const Result<Staging> plan = PlanGroupStaging(shape.value(), algo, kSsb, kSrb, kBytes, kDefaultMinSliceBytes);
      ASSERT_TRUE(plan.ok()) << plan.status().message();
      EXPECT_GE(plan->slice, kDefaultMinSliceBytes) << name;
      EXPECT_GT(plan->step_groups, 1u) << name << ": the test no longer cuts the nodes a round reaches";
      if (p == 1) {
        EXPECT_GT(plan->row_parts, 1u) << name << ": the test no longer cuts the rows";
      }
      std::vector<admin::CountersReply> before;
      for (uint32_t n = 0; n < 3; ++n) before.push_back(QueryCounters(cluster.node(n).admin_socket()));
      RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), placements[p], name,
                  {"--bytes", std::to_string(kBytes), "--iterations", std::to_string(kCalls), "--algorithm",
                   NodeLevelDesignName(algo)});
      ExpectAllOk(job, name, cluster);
      for (uint32_t n = 0; n < 3; ++n) {
        const admin::CountersReply after = QueryCounters(cluster.node(n).admin_socket());
        EXPECT_EQ(after.rounds() - before[n].rounds(), kCalls * plan->rounds) << name << " node " << n;
        EXPECT_EQ(after.collectives_failed() - before[n].collectives_failed(), 0u) << name << " node " << n;
      }
    }
  }
}

// Nodes configured with different minimum slices: the group plans with the smallest (here
// 2 KiB, where a whole round of 2 KiB slices fits), on every node and every rank alike.
TEST(MultiNodeAlltoallShapes, GroupPlansWithTheSmallestMinimumSlice) {
  constexpr uint64_t kSsb = 24 << 10, kSrb = 16 << 10, kBytes = 100000;
  constexpr uint32_t kCalls = 3;
  TempDir dir;
  Cluster cluster(dir, 3, {"--ssb-bytes", "24KiB", "--srb-bytes", "16KiB"});
  cluster.AddFlags(1, {"--min-slice-bytes", "8KiB"});
  cluster.AddFlags(2, {"--min-slice-bytes", "2KiB"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::vector<uint32_t> placement = {0, 0, 1, 1, 2, 2};
  const Result<GroupShape> shape = GroupShape::Make(3, placement);
  ASSERT_TRUE(shape.ok()) << shape.status().message();
  const Result<Staging> plan = PlanGroupStaging(shape.value(), NodeLevelDesign::kV3, kSsb, kSrb, kBytes, 2048);
  const Result<Staging> other = PlanGroupStaging(shape.value(), NodeLevelDesign::kV3, kSsb, kSrb, kBytes, 4096);
  ASSERT_TRUE(plan.ok() && other.ok());
  ASSERT_NE(plan->rounds, other->rounds) << "the test no longer tells the minimums apart";
  std::vector<admin::CountersReply> before;
  for (uint32_t n = 0; n < 3; ++n) before.push_back(QueryCounters(cluster.node(n).admin_socket()));
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), placement, "smallest-minimum",
              {"--bytes", std::to_string(kBytes), "--iterations", std::to_string(kCalls), "--algorithm", "v3"});
  ExpectAllOk(job, "smallest-minimum", cluster);
  for (uint32_t n = 0; n < 3; ++n) {
    const admin::CountersReply after = QueryCounters(cluster.node(n).admin_socket());
    EXPECT_EQ(after.rounds() - before[n].rounds(), kCalls * plan->rounds) << "node " << n;
  }
}

}  // namespace
}  // namespace ohio::testing
