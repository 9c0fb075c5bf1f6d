// The stage report (OHIO_STAGE_TIMES=1, client/libohio/stage_report.h): what each rank prints when it
// leaves, for a group on one node (single copy) and one spanning nodes (eager rounds, with the
// daemon's stamped steps), checked for what must hold whatever the scheduler does: every call
// counted, the stages adding up to the call time, the daemon's steps present and in order; and
// nothing printed when the variable is unset.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/rank_job.h"
#include "tests/harness/scoped_env.h"
#include "tests/harness/stage_lines.h"

namespace ohio::testing {
namespace {

using std::chrono::seconds;

constexpr auto kDeadline = seconds(120);

// The "ohio stages:" line of one rank's output for `bytes`; empty if there is none.
StageFields StageLine(const std::string& output, uint64_t bytes) {
  for (StageFields& fields : StageLines(output)) {
    if (fields["bytes"] == static_cast<double>(bytes)) return fields;
  }
  return {};
}

double SumOfStages(const StageFields& f) {
  double sum = 0;
  for (const char* s : {"await_ssb_us", "copy_in_us", "meet_us", "copy_out_on_node_us", "read_peers_us",
                        "await_readers_us", "await_blocks_us", "copy_out_across_nodes_us"}) {
    sum += f.at(s);
  }
  return sum;
}

// Every rank's line for `bytes`, with what must hold of any call checked: one line per rank,
// every call counted, and the stages covering the call but for the few instructions after the
// last lap (values are rounded to 0.01 us). Empty if a rank has no line.
std::vector<StageFields> CheckedLines(RankJob& job, uint64_t bytes, uint32_t calls) {
  std::vector<StageFields> lines;
  for (uint32_t r = 0; r < job.size(); ++r) {
    StageFields f = StageLine(job.rank(r).Output(), bytes);
    if (f.empty()) {
      ADD_FAILURE() << "rank " << r << " printed no stage line for " << bytes << " bytes: " << job.rank(r).Output();
      return {};
    }
    EXPECT_EQ(f.at("rank"), r);
    EXPECT_EQ(f.at("calls"), calls) << "rank " << r;
    EXPECT_LE(SumOfStages(f), f.at("total_us") + 0.05) << "rank " << r;
    EXPECT_GE(SumOfStages(f), 0.5 * f.at("total_us")) << "rank " << r;
    lines.push_back(std::move(f));
  }
  return lines;
}

TEST(StageReport, OneNodeSingleCopyStagesAddUpToTheCall) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  constexpr uint32_t kCalls = 50;
  constexpr uint64_t kBytes = 65536;
  // Read in place from 32 KiB, where every rank has a core; on a box whose ranks share them the
  // default switch is 256 KiB (client/libohio/single_copy.h), and this test is about the in-place path.
  ScopedEnv single_copy("OHIO_SINGLE_COPY_BYTES", "32768");
  StageTimes on;
  RankJob job(dir, daemon.socket(), "stages1", 4, {"--bytes", std::to_string(kBytes), "--iterations", std::to_string(kCalls)});
  for (int code : job.Wait(kDeadline)) ASSERT_EQ(code, 0) << job.Outputs();
  const auto lines = CheckedLines(job, kBytes, kCalls);
  ASSERT_EQ(lines.size(), job.size());
  for (const StageFields& f : lines) {
    // Read in place from the other ranks: nothing staged in the SSB.
    EXPECT_GT(f.at("read_peers_us"), 0.0);
    EXPECT_EQ(f.at("copy_in_us"), 0.0);
    EXPECT_EQ(f.at("await_blocks_us"), 0.0);
    // One node: the daemon takes no step.
    EXPECT_EQ(f.count("daemon_begun_us"), 0u);
  }
}

TEST(StageReport, AcrossNodesTheDaemonsStepsAreOnTheRanksTimeline) {
  TempDir dir;
  constexpr uint32_t kNodes = 3, kCalls = 200;
  constexpr uint64_t kBytes = 256;  // eager
  Cluster cluster(dir, kNodes);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  StageTimes on;
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(kNodes, 2), "stages3",
              {"--bytes", std::to_string(kBytes), "--iterations", std::to_string(kCalls)});
  for (int code : job.Wait(kDeadline)) ASSERT_EQ(code, 0) << job.Outputs() << cluster.Logs();
  const auto lines = CheckedLines(job, kBytes, kCalls);
  ASSERT_EQ(lines.size(), job.size());
  for (const StageFields& f : lines) {
    EXPECT_GT(f.at("copy_in_us"), 0.0);
    EXPECT_GT(f.at("copy_out_across_nodes_us"), 0.0);
    EXPECT_EQ(f.at("read_peers_us"), 0.0);
    // Every round's steps were stamped, in the order they happen: the daemon begins after
    // this rank arrived, posts its puts, and publishes the last peer block after posting.
    for (const char* step : {"daemon_begun_us", "daemon_posted_us", "daemon_written_us", "peers_begun_us",
                             "daemon_landed_us", "trip_us"}) {
      ASSERT_EQ(f.count(step), 1u) << step << " missing: " << job.Outputs();
    }
    EXPECT_GE(f.at("daemon_begun_us"), 0.0);
    EXPECT_LE(f.at("daemon_begun_us"), f.at("daemon_posted_us"));
    EXPECT_LE(f.at("daemon_posted_us"), f.at("daemon_landed_us"));
    EXPECT_GT(f.at("trip_us"), 0.0);
    // The rank saw its last block after the daemon published it: the wait for blocks ends
    // after daemon_landed, counted from the arrival.
    EXPECT_LE(f.at("daemon_landed_us"), f.at("meet_us") + f.at("copy_out_on_node_us") + f.at("await_blocks_us") +
                                             f.at("copy_out_across_nodes_us") + 0.05);
  }
}

TEST(StageReport, NothingIsPrintedUnlessAsked) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  unsetenv("OHIO_STAGE_TIMES");
  RankJob job(dir, daemon.socket(), "quiet", 2, {"--bytes", "64", "--iterations", "20"});
  for (int code : job.Wait(kDeadline)) ASSERT_EQ(code, 0) << job.Outputs();
  EXPECT_EQ(job.Outputs().find("ohio stages"), std::string::npos) << job.Outputs();
}

}  // namespace
}  // namespace ohio::testing
