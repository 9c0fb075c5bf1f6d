// ohio-sim against real ohiods: the same shape, sizes and calls run once by an emulated cluster
// (real ohiods on loopback, real rank processes checking every byte) and once by ohio-sim with
// the daemons' default buffers and table. Each node's data frames, payload bytes and control
// frames (ROUND_READY, CREDIT) as its admin counters count them must equal what the simulated
// daemon of that node sent: the simulation plays the rounds the daemons play, eager and
// announced, staged in several rounds, and, forced, as a hypercube and direct; and alltoallv
// with the same count matrix on both sides: one round, streamed in several, and as a hypercube
// that carries the call or goes again pairwise.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "daemon/ops/config.h"
#include "shm/tables/internode_choice.h"
#include "tests/harness/cluster.h"
#include "tests/harness/rank_job.h"
#include "tests/harness/scoped_env.h"
#include "sim/count_matrix.h"
#include "tests/sim/sim_runner.h"

namespace ohio::testing {
namespace {

using std::chrono::seconds;

constexpr auto kDeadline = seconds(120);
constexpr uint32_t kCalls = 3;  // per size

std::string Join(const std::vector<uint64_t>& v) {
  std::string s;
  for (uint64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// `sizes` are alltoalls' M; with `counts` (a generator, sim/count_matrix.h) the calls are
// alltoallvs of that matrix instead.
void CompareWithOhiod(uint32_t nodes, uint32_t ppn, const std::vector<uint64_t>& sizes,
                      std::optional<InterNodeAlgorithm> forced, const std::string& counts = "",
                      nlohmann::json* report = nullptr) {
  SCOPED_TRACE(std::to_string(nodes) + "x" + std::to_string(ppn) + " " +
               (forced ? InterNodeAlgorithmName(*forced) : "built-in table") + " " + counts);
  TempDir dir;
  const std::string counts_file = dir.file("counts.txt");
  if (!counts.empty()) {
    auto m = sim::GenerateCountMatrix(counts, nodes * ppn);
    ASSERT_TRUE(m.ok()) << m.status().message();
    std::ofstream(counts_file) << sim::RenderCountMatrix(m.value());
  }
  // The simulated run first: its report is what the daemons must count.
  const DaemonConfig defaults;
  std::vector<std::string> sim_args = {
      "--nodes", std::to_string(nodes), "--ppn", std::to_string(ppn), "--iterations", std::to_string(kCalls),
      "--ssb-bytes", std::to_string(defaults.ssb_bytes), "--srb-bytes", std::to_string(defaults.srb_bytes),
      "--min-slice-bytes", std::to_string(defaults.min_slice_bytes), "--direct-window",
      std::to_string(defaults.direct_window), "--internode", forced ? InterNodeAlgorithmName(*forced) : "table"};
  if (counts.empty()) {
    sim_args.insert(sim_args.end(), {"--bytes", Join(sizes)});
  } else {
    sim_args.insert(sim_args.end(), {"--counts", counts_file});
  }
  const SimRun sim = RunOhioSim(sim_args);
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  ASSERT_FALSE(sim.report.is_discarded()) << sim.output;
  if (report) *report = sim.report;
  Cluster cluster(dir, nodes, {"--log-level", "info"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  std::optional<ScopedEnv> internode;
  if (forced) internode.emplace("OHIO_INTERNODE_ALGORITHM", InterNodeAlgorithmName(*forced));
  std::vector<admin::CountersReply> before;
  for (uint32_t n = 0; n < nodes; ++n) before.push_back(QueryCounters(cluster.node(n).admin_socket()));
  std::vector<std::string> args = {"--iterations", std::to_string(kCalls), "--bytes"};
  for (uint64_t b : sizes) args.push_back(std::to_string(b));
  if (!counts.empty()) args = {"--calls", std::to_string(kCalls), "--counts-file", counts_file};
  // The ranks keep the group open after their calls: leaving would send RANK_GONE, which is
  // no round's.
  RankJob job(
      dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(nodes, ppn), "sim-vs-ohiod", args,
      [](uint32_t) { return std::vector<std::string>{"--stall-after"}; }, std::nullopt,
      counts.empty() ? RankJob::kAlltoallRank : "tests/tools/alltoallv_rank");
  for (uint32_t r = 0; r < job.size(); ++r) {
    ASSERT_TRUE(job.rank(r).WaitForOutput("stalling", kDeadline)) << job.Outputs() << cluster.Logs();
  }
  for (uint32_t n = 0; n < nodes; ++n) {
    SCOPED_TRACE("node " + cluster.name(n));
    const auto& simulated = sim.report["per_node"][n];
    const admin::CountersReply now = QueryCounters(cluster.node(n).admin_socket());
    const auto& t = now.transport_counters();
    const auto& t0 = before[n].transport_counters();
    EXPECT_EQ(now.collectives_served() - before[n].collectives_served(), kCalls * (counts.empty() ? sizes.size() : 1));
    EXPECT_EQ(t.data_frames_sent() - t0.data_frames_sent(), simulated["data_frames_sent"].get<uint64_t>());
    EXPECT_EQ(t.data_frames_received() - t0.data_frames_received(), simulated["data_frames_received"].get<uint64_t>());
    EXPECT_EQ(now.bytes_sent() - before[n].bytes_sent(), simulated["bytes_sent"].get<uint64_t>());
    EXPECT_EQ(t.control_frames_sent() - t0.control_frames_sent(), simulated["control_frames_sent"].get<uint64_t>());
    EXPECT_EQ(t.control_frames_received() - t0.control_frames_received(),
              simulated["control_frames_received"].get<uint64_t>());
  }
  for (uint32_t r = 0; r < job.size(); ++r) job.rank(r).Signal(SIGKILL);
  job.Wait(seconds(10));
}

// Eager (1, 4 KiB), announced in one round (64 KiB) and in several (4 MiB: 2 x 2 x 4 MiB per
// rank, more than the 16 MiB SSB holds), with ROUND_READYs, v3 CREDITs for chunked deliveries,
// and the ROUND_READY an eager round sends after an announced one (the sizes run twice).
TEST(SimVsOhiod, TwoNodesTwoRanksBuiltInTable) {
  CompareWithOhiod(2, 2, {1, 4096, 65536, 4 << 20, 1, 65536}, std::nullopt);
}

TEST(SimVsOhiod, FourNodesHypercubeAndDirect) {
  CompareWithOhiod(4, 1, {1, 4096, 65536}, InterNodeAlgorithm::kHypercube);
  CompareWithOhiod(4, 1, {1, 4096, 65536}, InterNodeAlgorithm::kDirect);
}

// Alltoallv of counts that fit one round (a quarter of the pairs 0), and of a few heavy pairs
// (12 MiB, more than a rank's region of the 16 MiB SSB) that stream in several rounds while the
// other nodes' parts came whole. The built-in table runs no hypercube at 2 nodes.
TEST(SimVsOhiod, AlltoallvOneRoundAndStreamed) {
  // Each case is the one meant (checked on the simulation's report), not a neighbour of it.
  nlohmann::json report;
  CompareWithOhiod(2, 2, {}, std::nullopt, "uniform:4096:7", &report);
  EXPECT_EQ(report["alltoallv"]["internode"], "pairwise");
  EXPECT_EQ(report["alltoallv"]["rounds"], 1);
  CompareWithOhiod(2, 2, {}, std::nullopt, "skewed:12582912:3", &report);
  EXPECT_GT(report["alltoallv"]["stream_rounds"].get<uint64_t>(), 0u) << report.dump();
}

// Alltoallv as a hypercube: small counts go as one (every call); heavy ones make the first
// call's hypercube void (headers only), so it goes again pairwise and the calls after it stay
// pairwise.
TEST(SimVsOhiod, AlltoallvHypercube) {
  nlohmann::json report;
  CompareWithOhiod(4, 1, {}, InterNodeAlgorithm::kHypercube, "uniform:512:5", &report);
  EXPECT_EQ(report["alltoallv"]["internode"], "hypercube");
  EXPECT_EQ(report["alltoallv"]["cube_went_again"], 0);
  CompareWithOhiod(4, 1, {}, InterNodeAlgorithm::kHypercube, "skewed:12582912:3", &report);
  EXPECT_EQ(report["alltoallv"]["cube_went_again"], 1) << report.dump();
}

}  // namespace
}  // namespace ohio::testing
