// The hypercube inter-node algorithm (shm/plan/bruck_plan.h) run by real daemons: every byte of every
// call checked by the ranks, each node's frames and payload bytes equal to what ohio-plan
// computes for it (ceil(log2 N) messages per call, blocks forwarded), and calls whose nodes
// do not all run it with the same M fail alike on every rank, with the group going on.
#include <gtest/gtest.h>
#include <signal.h>

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "client/ohio_plan/plan_report.h"
#include "daemon/ops/config.h"
#include "proto/admin.pb.h"
#include "shm/plan/bruck_plan.h"
#include "shm/tables/internode_table_text.h"
#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/rank_job.h"
#include "tests/harness/scoped_env.h"

namespace ohio::testing {
namespace {

using std::chrono::seconds;

constexpr auto kDeadline = seconds(120);

bool Contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

// Node index per rank for `ppn` ranks on each node in turn.
std::vector<uint32_t> Placement(const std::vector<uint32_t>& ppn) {
  std::vector<uint32_t> rank_node;
  for (uint32_t n = 0; n < ppn.size(); ++n) rank_node.insert(rank_node.end(), ppn[n], n);
  return rank_node;
}

// What ohio-plan says node `node` costs per call of `bytes`, with the daemons' default buffers
// and `table` (the built-in one, or the one OHIO_INTERNODE_ALGORITHM forces).
NodePlan PlannedNode(const std::vector<uint32_t>& ppn, uint64_t bytes, uint32_t node, InterNodeAlgorithm* internode,
                     const InterNodeTable& table = DefaultInterNodeTable()) {
  PlanRequest request;
  request.internode_table = table;
  request.ppn = ppn;
  request.bytes_per_rank = bytes;
  request.design = Design::kV3;
  request.ssb_bytes = DaemonConfig().ssb_bytes;
  request.srb_bytes = DaemonConfig().srb_bytes;
  request.every_node = true;
  auto report = MakePlanReport(request);
  EXPECT_TRUE(report.ok()) << report.status().message();
  *internode = report.value().internode;
  return report.value().nodes.at(node);
}

// Runs `calls` calls of each size on one node per entry of `ppn`, checks every byte (the
// ranks do) and each node's counters against ohio-plan's figures; `hypercube_sizes` of the
// sizes must be planned as hypercube calls.
// Returns the largest peak of puts in flight any node reported.
uint32_t RunAndCompareWithPlan(const std::vector<uint32_t>& ppn, const std::vector<uint64_t>& sizes, uint32_t calls,
                               uint32_t hypercube_sizes, std::optional<InterNodeAlgorithm> forced = std::nullopt,
                               const std::vector<std::string>& daemon_args = {},
                               const std::vector<std::string>& rank_args = {}) {
  const InterNodeTable table = forced ? ForcedInterNodeTable(*forced) : DefaultInterNodeTable();
  // The job's ranks force the algorithm: OHIO_INTERNODE_ALGORITHM travels in their joins.
  std::optional<ScopedEnv> internode;
  if (forced) internode.emplace("OHIO_INTERNODE_ALGORITHM", InterNodeAlgorithmName(*forced));
  uint32_t peak = 0;
  TempDir dir;
  const uint32_t nodes = static_cast<uint32_t>(ppn.size());
  std::vector<std::string> flags = {"--log-level", "info"};
  flags.insert(flags.end(), daemon_args.begin(), daemon_args.end());
  Cluster cluster(dir, nodes, flags);
  EXPECT_TRUE(cluster.Start()) << cluster.Logs();
  if (::testing::Test::HasFailure()) return 0;
  std::vector<admin::CountersReply> before;
  for (uint32_t n = 0; n < nodes; ++n) before.push_back(QueryCounters(cluster.node(n).admin_socket()));
  std::vector<std::string> args = {"--iterations", std::to_string(calls), "--bytes"};
  for (uint64_t b : sizes) args.push_back(std::to_string(b));
  args.insert(args.end(), rank_args.begin(), rank_args.end());
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), Placement(ppn), "cube", args,
              [](uint32_t) { return std::vector<std::string>{"--stall-after"}; });
  // A rank says "stalling" only once every call's bytes matched.
  for (uint32_t r = 0; r < job.size(); ++r) {
    if (!job.rank(r).WaitForOutput("stalling", kDeadline)) {
      ADD_FAILURE() << job.Outputs() << cluster.Logs();
      return 0;
    }
  }
  for (uint32_t n = 0; n < nodes; ++n) {
    SCOPED_TRACE("node " + cluster.name(n));
    uint64_t frames = 0, bytes = 0;
    uint32_t cube = 0;
    for (uint64_t b : sizes) {
      InterNodeAlgorithm internode = InterNodeAlgorithm::kPairwise;
      const NodePlan p = PlannedNode(ppn, b, n, &internode, table);
      if (internode == InterNodeAlgorithm::kHypercube) {
        ++cube;
        EXPECT_EQ(p.sends, BruckRounds(nodes)) << b << " bytes";
      }
      frames += p.sends * calls;
      bytes += p.bytes_on_wire * calls;
    }
    EXPECT_EQ(cube, hypercube_sizes);
    const admin::CountersReply now = QueryCounters(cluster.node(n).admin_socket());
    const auto& t = now.transport_counters();
    const auto& t0 = before[n].transport_counters();
    EXPECT_EQ(now.collectives_served() - before[n].collectives_served(), calls * sizes.size());
    EXPECT_EQ(t.data_frames_sent() - t0.data_frames_sent(), frames);
    EXPECT_EQ(now.bytes_sent() - before[n].bytes_sent(), bytes);
    EXPECT_EQ(now.data_connections(), nodes - 1u);
    peak = std::max(peak, now.puts_in_flight_peak());
  }
  for (uint32_t r = 0; r < job.size(); ++r) job.rank(r).Signal(SIGKILL);
  job.Wait(seconds(10));
  return peak;
}

TEST(Hypercube, FiveNodesUnevenRanks) {
  // Blocks up to 64 x 3 x 3 bytes: the hypercube; 4 KiB: pairwise eager; 256 KiB: announced
  // rounds. Each size follows the others, so every transition runs (credit after an announced
  // round included).
  RunAndCompareWithPlan({2, 1, 3, 1, 2}, {1, 64, 4096, 64, 256 << 10, 100}, 10, 4);
}

TEST(Hypercube, EightNodes) { RunAndCompareWithPlan({1, 1, 1, 1, 1, 1, 1, 1}, {0, 8, 1000}, 30, 3); }

TEST(Hypercube, ThirteenNodes) {
  // Blocks of 64 B and 1 KiB: the hypercube; 16 KiB (4 KiB x 2 x 2): pairwise.
  RunAndCompareWithPlan(std::vector<uint32_t>(13, 2), {16, 256, 4096}, 10, 2);
}

// A group joined with a hint (the MPI shim's 4 KiB class) gets buffers sized for its calls, and
// those hold the hypercube's inboxes: at 8 nodes x 1, calls of 2 and 4 KiB run it (3 frames per
// node, as planned with the configured buffers) instead of falling back to pairwise (7).
TEST(Hypercube, AHintedGroupHasRoomForIt) {
  RunAndCompareWithPlan(std::vector<uint32_t>(8, 1), {2048, 4096, 64}, 10, 3, std::nullopt, {}, {"--hint", "4096"});
}

// Every algorithm forced by the job (OHIO_INTERNODE_ALGORITHM) at 2 and 3 nodes, where the built-in table
// runs pairwise, at sizes from tiny to announced; the hypercube wherever it fits.
TEST(InterNodeAlgorithms, EachForcedAtTwoAndThreeNodes) {
  for (const std::vector<uint32_t>& ppn : {std::vector<uint32_t>{2, 1}, std::vector<uint32_t>{1, 3, 2}}) {
    for (InterNodeAlgorithm internode : {InterNodeAlgorithm::kPairwise, InterNodeAlgorithm::kHypercube, InterNodeAlgorithm::kDirect}) {
      SCOPED_TRACE(std::string(InterNodeAlgorithmName(internode)) + " at " + std::to_string(ppn.size()) + " nodes");
      RunAndCompareWithPlan(ppn, {1, 500, 2 << 20}, 3, internode == InterNodeAlgorithm::kHypercube ? 2 : 0, internode);
      if (HasFailure()) return;
    }
  }
}

// Direct keeps at most its window (4 by default, 2 with --direct-window 2) of puts in flight
// from a node; pairwise posts all 7 of an eager round at once. All with every byte checked and
// the plan's frames.
TEST(InterNodeAlgorithms, DirectBoundsWhatANodeHasInFlight) {
  const std::vector<uint32_t> ppn(8, 1);
  const uint32_t direct_peak = RunAndCompareWithPlan(ppn, {4096, 256 << 10}, 10, 0, InterNodeAlgorithm::kDirect);
  EXPECT_LE(direct_peak, DaemonConfig().direct_window);
  EXPECT_GE(direct_peak, 1u);
  const uint32_t narrow_peak =
      RunAndCompareWithPlan(ppn, {4096, 256 << 10}, 10, 0, InterNodeAlgorithm::kDirect, {"--direct-window", "2"});
  EXPECT_LE(narrow_peak, 2u);
  EXPECT_GE(narrow_peak, 1u);
  const uint32_t pairwise_peak = RunAndCompareWithPlan(ppn, {4096}, 10, 0, InterNodeAlgorithm::kPairwise);
  EXPECT_EQ(pairwise_peak, 7u);
}

// A job on 5 nodes x 2 ranks at 64 bytes (the hypercube) where `odd` ranks pass other
// arguments: every rank must end with `expect`, its text containing `text`, and (for a size
// mismatch) the group must then run a call at 64 bytes.
void RunOdd(const std::string& name, const std::vector<uint32_t>& odd, const std::vector<std::string>& odd_args,
            const std::vector<std::string>& expect_args, const std::string& text) {
  TempDir dir;
  Cluster cluster(dir, 5);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  std::vector<std::string> args = {"--bytes", "64", "--iterations", "3"};
  args.insert(args.end(), expect_args.begin(), expect_args.end());
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), Placement({2, 2, 2, 2, 2}), name, args,
              [&](uint32_t r) {
                for (uint32_t o : odd) {
                  if (o == r) return odd_args;
                }
                return std::vector<std::string>{};
              });
  auto codes = job.Wait(kDeadline);
  for (uint32_t r = 0; r < job.size(); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(codes[r], 0) << job.Outputs() << cluster.Logs();
    const std::string out = job.rank(r).Output();
    EXPECT_TRUE(Contains(out, text)) << out;
  }
}

TEST(Hypercube, NodesOfAnotherMBothHypercube) {
  // n2 passes 32: both sizes run the hypercube, and the inbox headers tell them apart.
  RunOdd("other-m", {4, 5}, {"--my-bytes", "32"}, {"--expect", "size mismatch"},
         "ranks disagree on the bytes per rank of this alltoall: 32 on node n2; 64 on nodes n0,n1,n3,n4");
  if (HasFailure()) return;
  RunOdd("other-m-after", {4, 5}, {"--my-bytes", "32"}, {"--expect", "size mismatch"}, "after mismatch ok");
}

TEST(Hypercube, ANodeRunningPairwise) {
  // n3's 4 KiB runs pairwise eager; its puts land under the others' inboxes.
  RunOdd("pairwise", {6, 7}, {"--my-bytes", "4096"}, {"--expect", "size mismatch"},
         "64 on nodes n0,n1,n2,n4; 4096 on node n3");
}

TEST(Hypercube, ANodeAnnouncingItsRound) {
  // n1's 4 MiB is announced (ROUND_READY), the others' 64 bytes a hypercube.
  RunOdd("announced", {2, 3}, {"--my-bytes", "4194304"}, {"--expect", "size mismatch"},
         "64 on nodes n0,n2,n3,n4; 4194304 on node n1");
}

TEST(Hypercube, ANodesOwnRanksDisagree) {
  // Rank 9 (n4) alone passes 32: n4 never runs the hypercube and tells every node why.
  RunOdd("split", {9}, {"--my-bytes", "32"}, {"--expect", "size mismatch"}, "after mismatch ok");
}

TEST(Hypercube, ARankOptsOut) {
  // Rank 1 (n0) opts out of the second call: 'opted out' on every rank, and the third call runs.
  TempDir dir;
  Cluster cluster(dir, 5);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), Placement({2, 2, 2, 2, 2}), "opt-out",
              {"--bytes", "64", "--iterations", "3"}, [](uint32_t r) {
                return r == 1 ? std::vector<std::string>{"--opt-out-at", "1"} : std::vector<std::string>{"--opted-out-at", "1"};
              });
  auto codes = job.Wait(kDeadline);
  for (uint32_t r = 0; r < job.size(); ++r) {
    EXPECT_EQ(codes[r], 0) << job.Outputs() << cluster.Logs();
    EXPECT_TRUE(Contains(job.rank(r).Output(), "call 1: code=")) << job.rank(r).Output();
  }
}

}  // namespace
}  // namespace ohio::testing
