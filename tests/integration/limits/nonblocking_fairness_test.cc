// One uid's large nonblocking calls on one node take neither ohiod's memory nor its engine from
// another uid (daemon/engine/nonblocking_alltoall.h, progress_engine.h): eight one-rank groups
// of uid nobody post 256 MiB ohio_ialltoall calls back to back while root's 2-rank job runs 1,000
// verified 4 KiB ohio_ialltoall calls. ohiod's resident memory grows by the calls' bounded
// staging, not by the calls, and the staging is counted where ohioctl shows it; root's job
// takes at most 3x its time alone. Real daemon, real rank processes.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/rank_job.h"

namespace ohio::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kDeadline = seconds(120);
constexpr uid_t kNobody = 65534;
constexpr int kHogs = 8;

// A field of /proc/<pid>/status in KiB ("VmRSS", "VmHWM"), or -1.
long StatusKiB(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

// Root's 2-rank job of 1,000 verified 4 KiB nonblocking calls, each waited for: the time its
// slower rank took for them (from its join to its last call, as the tool measures it).
double VictimSeconds(const TempDir& dir, const Daemon& daemon, const std::string& name) {
  RankJob job(dir, daemon.socket(), name, 2, {"--bytes", "4096", "--batches", "1000", "--wait"}, nullptr,
              "tests/tools/ialltoall_rank");
  for (int code : job.Wait(kDeadline)) EXPECT_EQ(code, 0) << job.Outputs() << daemon.Log();
  double slowest = 0;
  for (uint32_t r = 0; r < job.size(); ++r) {
    const std::string out = job.rank(r).Output();
    const size_t at = out.find("loop_seconds=");
    EXPECT_NE(at, std::string::npos) << out;
    if (at != std::string::npos) slowest = std::max(slowest, std::stod(out.substr(at + 13)));
  }
  return slowest;
}

TEST(NonblockingFairness, LargeCallsOfOneUidTakeNeitherMemoryNorTheEngine) {
  TempDir dir;
  Daemon daemon(dir, {"--memory-limit", "512MiB"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  // Its time alone: the median of three runs, two before the attack and one after.
  std::vector<double> alone = {VictimSeconds(dir, daemon, "alone-1"), VictimSeconds(dir, daemon, "alone-2")};
  const long rss_before = StatusKiB(daemon.pid(), "VmRSS");
  ASSERT_GT(rss_before, 0);

  const std::string tool = ToolAnyoneCanRun(dir, "tests/tools/large_ialltoall_rank");
  std::vector<std::unique_ptr<Process>> hogs;
  for (int i = 0; i < kHogs; ++i) {
    const std::string name = "hog" + std::to_string(i);
    hogs.push_back(std::make_unique<Process>(
        std::vector<std::string>{tool, "--socket", daemon.socket(), "--key", KeyHex(name), "--size", "1", "--rank",
                                 "0", "--bytes", std::to_string(256 << 20), "--seconds", "10"},
        dir.file(name + ".out"), kNobody));
  }
  for (auto& hog : hogs) ASSERT_TRUE(hog->WaitForOutput("posting", kDeadline)) << hog->Output() << daemon.Log();

  // The staging is counted while the calls move, and is far below the calls' 2 GiB.
  uint64_t most_staging = 0;
  for (int i = 0; i < 20; ++i) {
    most_staging = std::max<uint64_t>(most_staging, QueryCounters(daemon.admin_socket()).staging_bytes_in_use());
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_GT(most_staging, 0u) << "no staging counted while eight 256 MiB calls move";
  EXPECT_LE(most_staging, uint64_t{kHogs} * (256 << 10));

  const double attacked = VictimSeconds(dir, daemon, "attacked");
  for (auto& hog : hogs) {
    EXPECT_EQ(hog->Wait(kDeadline), 0) << hog->Output() << daemon.Log();
    EXPECT_NE(hog->Output().find("calls "), std::string::npos) << hog->Output();
  }
  alone.push_back(VictimSeconds(dir, daemon, "alone-3"));
  std::sort(alone.begin(), alone.end());
  EXPECT_LE(attacked, 3 * alone[1]) << "alone " << alone[0] << " s, " << alone[1] << " s and " << alone[2]
                                    << " s; beside eight 256 MiB calls of another uid " << attacked << " s";

  // Resident memory grew by the staging (256 KiB a call) and what a daemon touches anyway, not by
  // the calls: holding one call's rows took 256 MiB per group.
  const long peak = StatusKiB(daemon.pid(), "VmHWM");
  EXPECT_LE(peak - rss_before, 64 << 10) << "VmRSS " << rss_before << " KiB before, VmHWM " << peak << " KiB";
  const StatusQuery s = QueryStatus(daemon.admin_socket());
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.reply.staging_bytes_in_use(), 0u) << "the staging is freed with the calls";
  std::printf("alone %.3f s (median of 3), attacked %.3f s; staging at most %llu bytes; ohiod RSS %ld KiB, peak %ld KiB\n",
              alone[1], attacked, static_cast<unsigned long long>(most_staging), rss_before, peak);
}

}  // namespace
}  // namespace ohio::testing
