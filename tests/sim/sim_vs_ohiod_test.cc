// ohio-sim against real ohiods: the same shape, sizes and calls run once by an emulated cluster
// (real ohiods on loopback, real rank processes checking every byte) and once by ohio-sim with
// the daemons' default buffers and table. Each node's data frames, payload bytes and control
// frames (ROUND_READY, CREDIT) as its admin counters count them must equal what the simulated
// daemon of that node sent: the simulation plays the rounds the daemons play, eager and
// announced, staged in several rounds, and, forced, as a hypercube and direct.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "daemon/ops/config.h"
#include "shm/tables/internode_choice.h"
#include "tests/harness/cluster.h"
#include "tests/harness/rank_job.h"
#include "tests/harness/scoped_env.h"
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

void CompareWithOhiod(uint32_t nodes, uint32_t ppn, const std::vector<uint64_t>& sizes,
                      std::optional<InterNodeAlgorithm> forced) {
  SCOPED_TRACE(std::to_string(nodes) + "x" + std::to_string(ppn) + " " +
               (forced ? InterNodeAlgorithmName(*forced) : "built-in table"));
  // The simulated run first: its report is what the daemons must count.
  const DaemonConfig defaults;
  const SimRun sim = RunOhioSim({"--nodes", std::to_string(nodes), "--ppn", std::to_string(ppn), "--bytes", Join(sizes),
                                 "--iterations", std::to_string(kCalls), "--ssb-bytes", std::to_string(defaults.ssb_bytes),
                                 "--srb-bytes", std::to_string(defaults.srb_bytes), "--min-slice-bytes",
                                 std::to_string(defaults.min_slice_bytes), "--direct-window",
                                 std::to_string(defaults.direct_window), "--internode",
                                 forced ? InterNodeAlgorithmName(*forced) : "table"});
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  ASSERT_FALSE(sim.report.is_discarded()) << sim.output;

  TempDir dir;
  Cluster cluster(dir, nodes, {"--log-level", "info"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  std::optional<ScopedEnv> internode;
  if (forced) internode.emplace("OHIO_INTERNODE_ALGORITHM", InterNodeAlgorithmName(*forced));
  std::vector<admin::CountersReply> before;
  for (uint32_t n = 0; n < nodes; ++n) before.push_back(QueryCounters(cluster.node(n).admin_socket()));
  std::vector<std::string> args = {"--iterations", std::to_string(kCalls), "--bytes"};
  for (uint64_t b : sizes) args.push_back(std::to_string(b));
  // The ranks keep the group open after their calls: leaving would send RANK_GONE, which is
  // no round's.
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(nodes, ppn), "sim-vs-ohiod", args,
              [](uint32_t) { return std::vector<std::string>{"--stall-after"}; });
  for (uint32_t r = 0; r < job.size(); ++r) {
    ASSERT_TRUE(job.rank(r).WaitForOutput("stalling", kDeadline)) << job.Outputs() << cluster.Logs();
  }
  for (uint32_t n = 0; n < nodes; ++n) {
    SCOPED_TRACE("node " + cluster.name(n));
    const auto& simulated = sim.report["per_node"][n];
    const admin::CountersReply now = QueryCounters(cluster.node(n).admin_socket());
    const auto& t = now.transport_counters();
    const auto& t0 = before[n].transport_counters();
    EXPECT_EQ(now.collectives_served() - before[n].collectives_served(), kCalls * sizes.size());
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

}  // namespace
}  // namespace ohio::testing
