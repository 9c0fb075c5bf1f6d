// What ohio-sim's simulated daemons send is what ohio's planners plan: for several shapes
// (powers of two and not, uneven), pairwise, hypercube and direct, eager and announced rounds and
// calls staged in many rounds, each node's data frames and payload bytes equal ohio-plan's
// (client/ohio_plan/plan_report.h) times the calls, and its control frames equal the ROUND_READYs
// and CREDITs the round protocol sends for the planned rounds and deliveries; alltoallv moves each
// node's row parts for other nodes once, in as many rounds as the vector planners stage it.
// Exact; no timing.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "client/ohio_plan/plan_report.h"
#include "shm/plan/buffer_sizing.h"
#include "shm/plan/eager_plan.h"
#include "shm/plan/exchange_plan.h"
#include "shm/plan/vector_staging.h"
#include "shm/tables/internode_table_text.h"
#include "sim/count_matrix.h"
#include "tests/sim/sim_runner.h"

namespace ohio::testing {
namespace {

struct Case {
  std::string name;
  std::vector<uint32_t> ppn;
  std::vector<uint64_t> sizes;
  std::optional<InterNodeAlgorithm> forced;  // else the built-in table
  Design design = Design::kV3;
  uint64_t ssb = kDefaultSsbBytes;
  uint64_t srb = kDefaultSrbBytes;
};

constexpr uint32_t kIterations = 2;

struct Frames {
  uint64_t data = 0;
  uint64_t bytes = 0;
  uint64_t control = 0;
};

GroupShape ShapeOf(const std::vector<uint32_t>& ppn) {
  std::vector<uint32_t> rank_node;
  for (uint32_t n = 0; n < ppn.size(); ++n) rank_node.insert(rank_node.end(), ppn[n], n);
  return GroupShape::Make(static_cast<uint32_t>(ppn.size()), rank_node).value();
}

NodeLevelDesign AlgoOf(Design d) { return d == Design::kV1 ? NodeLevelDesign::kV1 : d == Design::kV2 ? NodeLevelDesign::kV2 : NodeLevelDesign::kV3; }

// Node `node`'s frames over the case's calls: data from ohio-plan; control as the round
// protocol sends them: an announced round's ROUND_READY to every other node and (v3) a CREDIT
// for every delivery past the two ROUND_READY grants; an eager round after an announced one
// announces itself too.
Frames Planned(const Case& c, uint32_t node) {
  const GroupShape shape = ShapeOf(c.ppn);
  const NodeLevelDesign algo = AlgoOf(c.design);
  const uint32_t nodes = shape.nodes();
  Frames f;
  bool after_announced = false;
  for (uint64_t m : c.sizes) {
    PlanRequest req;
    req.ppn = c.ppn;
    req.bytes_per_rank = m;
    req.design = c.design;
    req.ssb_bytes = c.ssb;
    req.srb_bytes = c.srb;
    req.every_node = true;
    if (c.forced) req.internode_table = ForcedInterNodeTable(*c.forced);
    auto report = MakePlanReport(req);
    EXPECT_TRUE(report.ok()) << report.status().message();
    if (!report.ok()) return f;
    const NodePlan& p = report.value().nodes.at(node);
    const bool eager = FitsEager(shape, PlanEagerLayout(shape, c.ssb, c.srb), m);
    uint64_t control = 0;
    if (!eager) {
      const Staging st = PlanGroupStaging(shape, algo, c.ssb, c.srb, m, kDefaultMinSliceBytes).value();
      for (uint64_t k = 0; k < st.rounds; ++k) {
        control += nodes - 1;
        const uint64_t d = PlanDeliveries(shape, algo, node, st.cover(k), c.srb).size();
        if (algo == NodeLevelDesign::kV3 && d > 2) control += d - 2;
      }
    }
    for (uint32_t i = 0; i < kIterations; ++i) {
      f.data += p.sends;
      f.bytes += p.bytes_on_wire;
      f.control += eager ? (after_announced ? nodes - 1 : 0) : control;
      after_announced = !eager;
    }
  }
  return f;
}

std::string Join(const std::vector<uint64_t>& v) {
  std::string s;
  for (uint64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

void RunCase(const Case& c) {
  SCOPED_TRACE(c.name);
  std::string ppn;
  for (uint32_t p : c.ppn) ppn += (ppn.empty() ? "" : ",") + std::to_string(p);
  const SimRun run = RunOhioSim({"--ppn-list", ppn, "--bytes", Join(c.sizes), "--iterations",
                                 std::to_string(kIterations), "--design", DesignName(c.design), "--ssb-bytes",
                                 std::to_string(c.ssb), "--srb-bytes", std::to_string(c.srb), "--internode",
                                 c.forced ? InterNodeAlgorithmName(*c.forced) : "table"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  ASSERT_FALSE(run.report.is_discarded()) << run.output;
  const auto& nodes = run.report["per_node"];
  ASSERT_EQ(nodes.size(), c.ppn.size());
  uint64_t data_sent = 0, data_received = 0, control_sent = 0, control_received = 0, bytes_sent = 0, bytes_received = 0;
  for (uint32_t n = 0; n < c.ppn.size(); ++n) {
    SCOPED_TRACE("node " + std::to_string(n));
    const Frames want = Planned(c, n);
    EXPECT_EQ(nodes[n]["data_frames_sent"].get<uint64_t>(), want.data);
    EXPECT_EQ(nodes[n]["bytes_sent"].get<uint64_t>(), want.bytes);
    EXPECT_EQ(nodes[n]["control_frames_sent"].get<uint64_t>(), want.control);
    data_sent += nodes[n]["data_frames_sent"].get<uint64_t>();
    data_received += nodes[n]["data_frames_received"].get<uint64_t>();
    bytes_sent += nodes[n]["bytes_sent"].get<uint64_t>();
    bytes_received += nodes[n]["bytes_received"].get<uint64_t>();
    control_sent += nodes[n]["control_frames_sent"].get<uint64_t>();
    control_received += nodes[n]["control_frames_received"].get<uint64_t>();
  }
  EXPECT_EQ(data_sent, data_received);
  EXPECT_EQ(bytes_sent, bytes_received);
  EXPECT_EQ(control_sent, control_received);
  // Each size ran as the planners choose (what the report says ran is checked against them).
  const GroupShape shape = ShapeOf(c.ppn);
  const auto& sizes = run.report["sizes"];
  ASSERT_EQ(sizes.size(), c.sizes.size());
  for (size_t i = 0; i < c.sizes.size(); ++i) {
    const EagerLayout layout = PlanEagerLayout(shape, c.ssb, c.srb);
    const bool eager = FitsEager(shape, layout, c.sizes[i]);
    const InterNodeTable table = c.forced ? ForcedInterNodeTable(*c.forced) : DefaultInterNodeTable();
    EXPECT_EQ(sizes[i]["eager"].get<bool>(), eager) << c.sizes[i];
    EXPECT_EQ(sizes[i]["internode"].get<std::string>(),
              InterNodeAlgorithmName(RoundInterNodeAlgorithm(shape, AlgoOf(c.design), layout, table, c.sizes[i], eager)))
        << c.sizes[i];
    EXPECT_GT(sizes[i]["median_s"].get<double>(), 0) << c.sizes[i];
  }
}

TEST(SimPlan, TwoNodesBuiltInTableEagerAndAnnounced) {
  // The last 1-byte call is eager after announced ones: it announces itself too.
  RunCase({"2x2 table", {2, 2}, {1, 4096, 65536, 1 << 20, 1}});
}

TEST(SimPlan, ThreeNodesEachInterNodeAlgorithm) {
  for (InterNodeAlgorithm a : {InterNodeAlgorithm::kPairwise, InterNodeAlgorithm::kHypercube, InterNodeAlgorithm::kDirect}) {
    RunCase({std::string("3x2 ") + InterNodeAlgorithmName(a), {2, 2, 2}, {1, 4096, 65536}, a});
  }
}

TEST(SimPlan, FourNodesHypercubeAndDirectWindow) {
  RunCase({"4x1 hypercube", {1, 1, 1, 1}, {1, 256, 4096}, InterNodeAlgorithm::kHypercube});
  // Direct with a window of 4 over 5 peers: the window holds puts back, every put still goes.
  RunCase({"6x1 direct", {1, 1, 1, 1, 1, 1}, {4096, 1 << 20}, InterNodeAlgorithm::kDirect});
}

TEST(SimPlan, CallsStagedInManyRounds) {
  // Small buffers: 64 KiB at 4 x 2 takes several rounds (v3: with chunked deliveries and credits).
  const Case v3{"4x2 v3 staged", {2, 2, 2, 2}, {64, 16384, 65536}, std::nullopt, Design::kV3, 65536, 32768};
  RunCase(v3);
  const SimRun run = RunOhioSim({"--nodes", "4", "--ppn", "2", "--bytes", "65536", "--iterations", "1",
                                 "--ssb-bytes", "65536", "--srb-bytes", "32768"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_GT(run.report["sizes"][0]["rounds"].get<uint64_t>(), 1u);
  RunCase({"4x2 v2 staged", {2, 2, 2, 2}, {64, 16384, 65536}, std::nullopt, Design::kV2, 65536, 65536});
  RunCase({"4x2 v1 staged", {2, 2, 2, 2}, {64, 16384}, std::nullopt, Design::kV1, 65536, 65536});
}

TEST(SimPlan, CallsCutToTheirFirstSlicesPredictTheRest) {
  // 1 MiB at 4 x 2 with 64 KiB of SSB: 256 rounds, a slice each. Simulating 2 of them and
  // predicting the rest from the second lands close to simulating all 256 (the slices are
  // alike), and the frames count what was simulated.
  const std::vector<std::string> common = {"--nodes", "4", "--ppn", "2", "--bytes", "1048576", "--iterations", "1",
                                           "--ssb-bytes", "65536", "--srb-bytes", "32768"};
  const SimRun all = RunOhioSim(common);
  std::vector<std::string> cut_args = common;
  cut_args.insert(cut_args.end(), {"--max-slices", "2"});
  const SimRun cut = RunOhioSim(cut_args);
  ASSERT_EQ(all.exit_code, 0) << all.output;
  ASSERT_EQ(cut.exit_code, 0) << cut.output;
  EXPECT_EQ(all.report["sizes"][0]["rounds"].get<uint64_t>(), 256u);
  EXPECT_EQ(all.report["sizes"][0]["simulated_rounds"].get<uint64_t>(), 256u);
  EXPECT_EQ(cut.report["sizes"][0]["rounds"].get<uint64_t>(), 256u);
  EXPECT_EQ(cut.report["sizes"][0]["simulated_rounds"].get<uint64_t>(), 2u);
  const double full = all.report["sizes"][0]["median_s"].get<double>();
  const double predicted = cut.report["sizes"][0]["median_s"].get<double>();
  EXPECT_NEAR(predicted, full, full * 0.01);
  EXPECT_LT(cut.report["per_node"][0]["data_frames_sent"].get<uint64_t>(),
            all.report["per_node"][0]["data_frames_sent"].get<uint64_t>() / 50);
  // A slice's time is the difference of the last two simulated: one is not enough.
  cut_args.back() = "1";
  const SimRun one = RunOhioSim(cut_args);
  EXPECT_EQ(one.exit_code, 2);
  EXPECT_NE(one.output.find("max slices must be 0 (every round) or at least 2"), std::string::npos) << one.output;
}

TEST(SimPlan, UnevenNodes) {
  RunCase({"3,1,2 table", {3, 1, 2}, {1, 4096, 65536}});
}

// Alltoallv run pairwise (forced): every call puts one frame to each other node per round, and
// over its rounds each node sends exactly what its ranks' rows hold for other nodes' ranks (MPI's
// counts, not the planners'), header-only frames carrying none; the rounds are one, or as many
// as the node whose part needs the most stream rounds (VectorStreamRounds); no control frames.
TEST(SimPlan, AlltoallvPairwiseMovesEveryRowPartOnce) {
  for (const std::vector<uint32_t>& ppn : {std::vector<uint32_t>{2, 2}, std::vector<uint32_t>{3, 1, 2}}) {
    for (const std::string& counts : {"uniform:4096:11", "skewed:12582912:2"}) {
      std::string ppn_list;
      for (uint32_t p : ppn) ppn_list += (ppn_list.empty() ? "" : ",") + std::to_string(p);
      SCOPED_TRACE(ppn_list + " " + counts);
      const GroupShape shape = ShapeOf(ppn);
      const sim::CountMatrix m = sim::GenerateCountMatrix(counts, shape.size()).value();
      const SimRun run = RunOhioSim({"--ppn-list", ppn_list, "--counts", counts, "--iterations",
                                     std::to_string(kIterations), "--internode", "pairwise"});
      ASSERT_EQ(run.exit_code, 0) << run.output;
      // The stream rounds the planners stage, from each node's count tables as in the segment.
      const EagerLayout layout = PlanEagerLayout(shape, kDefaultSsbBytes, kDefaultSrbBytes);
      uint64_t rounds = 1;
      for (uint32_t n = 0; n < shape.nodes(); ++n) {
        std::vector<CountEntry> tables;
        for (uint32_t l = 0; l < shape.ppn(n); ++l) {
          const uint32_t r = shape.rank_at(n, l);
          for (uint32_t j = 0; j < shape.size(); ++j) tables.push_back(CountEntry{m.at(r, j), 0, m.at(j, r)});
        }
        const NodeCounts node_counts{tables.data(), shape.size()};
        if (VectorFits(shape, layout, n, node_counts)) continue;
        uint64_t stream_rounds = 0;
        ASSERT_TRUE(VectorStreamRounds(shape, layout, n, node_counts, &stream_rounds));
        rounds = std::max(rounds, stream_rounds);
      }
      EXPECT_EQ(run.report["alltoallv"]["rounds"].get<uint64_t>(), rounds);
      EXPECT_EQ(run.report["alltoallv"]["stream_rounds"].get<uint64_t>(), rounds - 1);
      if (counts.rfind("skewed", 0) == 0) EXPECT_GT(rounds, 1u);
      for (uint32_t n = 0; n < shape.nodes(); ++n) {
        SCOPED_TRACE("node " + std::to_string(n));
        uint64_t sent = 0, received = 0;
        for (uint32_t a = 0; a < shape.size(); ++a) {
          for (uint32_t b = 0; b < shape.size(); ++b) {
            if (shape.node_of(a) == shape.node_of(b)) continue;
            if (shape.node_of(a) == n) sent += m.at(a, b);
            if (shape.node_of(b) == n) received += m.at(a, b);
          }
        }
        const auto& node = run.report["per_node"][n];
        const uint64_t frames = kIterations * rounds * (shape.nodes() - 1);
        EXPECT_EQ(node["data_frames_sent"].get<uint64_t>(), frames);
        EXPECT_EQ(node["data_frames_received"].get<uint64_t>(), frames);
        EXPECT_EQ(node["bytes_sent"].get<uint64_t>(), kIterations * sent);
        EXPECT_EQ(node["bytes_received"].get<uint64_t>(), kIterations * received);
        EXPECT_EQ(node["control_frames_sent"].get<uint64_t>(), 0u);
      }
    }
  }
}

}  // namespace
}  // namespace ohio::testing
