// Which calls ohio serves by default and which it hands to the MPI library (the selection table,
// shm/tables/selection_table.h; the client's decision, client/mpi/call_selection.h), under real
// mpirun (Open MPI) with libohio_mpi preloaded, against real daemons on one node and on 2
// emulated nodes: every byte checked by the program (tests/mpi/selection/selection_check.c) whichever
// side moved it, OHIO_STATS's counts and reasons, and each ohiod's handed-back counters by
// function and reason.
#include <gtest/gtest.h>

#include <string>

#include "tests/harness/cluster.h"
#include "tests/harness/process.h"
#include "tests/mpi/mpi_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(120);
constexpr const char* kCheck = "selection/selection_check";
using Env = std::vector<std::pair<std::string, std::string>>;

// Every node's ohiod served `served` calls and counts `handed_back` calls of `function` handed
// to the MPI library for `reason`, and none of it for any other reason.
void ExpectEveryDaemonCounted(Cluster& cluster, uint64_t served, const std::string& function,
                              const std::string& reason, long handed_back) {
  for (uint32_t n = 0; n < cluster.size(); ++n) {
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    EXPECT_EQ(c.collectives_served(), served) << "node " << n;
    for (const char* other : {"selection_table", "rank_opted_out", "ialltoall_min_bytes", "not_supported"}) {
      EXPECT_EQ(HandedBack(c, function, other), other == reason ? handed_back : 0)
          << "node " << n << ", " << function << " " << other << "\n" << c.DebugString();
    }
  }
}

// 4 ranks, 2 on each of 2 nodes, running `calls`; the job's output.
std::string RunAcrossNodes(Cluster& cluster, const TempDir& dir, const Env& env, const std::vector<std::string>& calls,
                           const std::string& name) {
  Process run(MpiRun(kOpenMpi, 4, ControlSockets(cluster), 2, env, kCheck, calls), dir.file(name + ".out"));
  EXPECT_EQ(run.Wait(kDeadline), 0) << run.Output() << cluster.Logs();
  return run.Output();
}

// 2 nodes x 2 ranks: 1 KiB per rank pair is served, 64 KiB handed to the library on every rank,
// both with correct bytes; both daemons count the one call the group handed back.
TEST(Selection, DefaultTableAcrossNodesServesSmallAndHandsBackLargeAlltoall) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::string out = RunAcrossNodes(cluster, dir, {}, {"alltoall:1024", "alltoall:65536"}, "default");
  ExpectAllOk(out, 4);
  EXPECT_EQ(Stats(out), std::make_pair(4L, 4L)) << out;
  EXPECT_NE(out.find("ohio:   of those, 4 MPI_Alltoall calls handed to the MPI library by the selection table"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("rank 0: MPI_Alltoall: 1 handed to the MPI library by the selection table: the selection "
                     "table hands alltoall on 2 nodes x 2 ranks (tcp) to the MPI library "
                     "(no row matches)"),
            std::string::npos)
      << out;
  ExpectEveryDaemonCounted(cluster, 1, "alltoall", "selection_table", 1);
}

// One node x 4 ranks: below 512 B and above 16 KiB per rank pair the library's shared memory
// wins and takes the call; 4 KiB is ohio's.
TEST(Selection, DefaultTableOnOneNodeServesTheMiddleSizesOnly) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  Process run(MpiRun(kOpenMpi, 4, {daemon.socket()}, 4, {}, kCheck, {"alltoall:64", "alltoall:4096", "alltoall:65536"}),
              dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << daemon.Log();
  const std::string out = run.Output();
  ExpectAllOk(out, 4);
  EXPECT_EQ(Stats(out), std::make_pair(4L, 8L)) << out;
  EXPECT_NE(out.find("ohio:   of those, 8 MPI_Alltoall calls handed to the MPI library by the selection table"),
            std::string::npos)
      << out;
  // 64 B and 64 KiB under one reason: it names the shape and the row, not the bytes.
  EXPECT_NE(out.find("rank 0: MPI_Alltoall: 2 handed to the MPI library by the selection table: the selection table "
                     "hands alltoall on 1 node x 4 ranks (tcp) to the MPI library (no row matches)"),
            std::string::npos)
      << out;
  const admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(c.collectives_served(), 1u);
  EXPECT_EQ(HandedBack(c, "alltoall", "selection_table"), 2) << c.DebugString();
}

// MPI_Alltoallv whose bytes straddle the table's split: rank 0 alone moves a 64 KiB block, so
// its own verdict is the library and it opts out; the others, whose blocks are 1 KiB, go with
// it, all with correct bytes. The same call with every block 1 KiB is served.
TEST(Selection, AlltoallvFallsThroughTogetherWhenOneRanksBytesSayLibrary) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::string out =
      RunAcrossNodes(cluster, dir, {}, {"alltoallv:65536:1024", "alltoallv:1024:1024"}, "straddle");
  ExpectAllOk(out, 4);
  EXPECT_EQ(Stats(out, "MPI_Alltoallv"), std::make_pair(4L, 4L)) << out;
  EXPECT_NE(out.find("rank 0: MPI_Alltoallv: 1 handed back: the selection table hands this rank's part of "
                     "alltoallv on 2 nodes x 2 ranks (tcp) to the MPI library by its largest block to or from one "
                     "rank (no row matches): this rank opted out of the call"),
            std::string::npos)
      << out;
  ExpectEveryDaemonCounted(cluster, 1, "alltoallv", "rank_opted_out", 1);
}

// The same straddling MPI_Alltoallv 100 times: the first 16 opt out through ohio's round, the
// other 84 go to the library without it (client/mpi/opt_out_run.h), all with correct bytes, on
// every rank alike; both daemons count every one as a rank's opt-out.
TEST(Selection, RepeatedOptOutsGoToTheLibraryWithoutTheRound) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::vector<std::string> calls(100, "alltoallv:65536:1024");
  const std::string out = RunAcrossNodes(cluster, dir, {}, calls, "repeated");
  ExpectAllOk(out, 4);
  EXPECT_EQ(Stats(out, "MPI_Alltoallv"), std::make_pair(0L, 400L)) << out;
  EXPECT_NE(out.find("rank 0: MPI_Alltoallv: 16 handed back: the selection table hands this rank's part of "
                     "alltoallv"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("rank 0: MPI_Alltoallv: 84 handed back: the last 16 calls of this communicator went to the "
                     "MPI library because a rank opted out: the next 1008 go there without asking, then one asks "
                     "again"),
            std::string::npos)
      << out;
  ExpectEveryDaemonCounted(cluster, 0, "alltoallv", "rank_opted_out", 100);
}

// OHIO_SELECTION=always: ohio serves the 64 KiB call the table hands back; any other value
// than always or table is said once and the table decides.
TEST(Selection, AlwaysServesWhatTheTableHandsBack) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::string always = RunAcrossNodes(cluster, dir, {{"OHIO_SELECTION", "always"}}, {"alltoall:65536"}, "always");
  ExpectAllOk(always, 4);
  EXPECT_EQ(Stats(always), std::make_pair(4L, 0L)) << always;
  ExpectEveryDaemonCounted(cluster, 1, "alltoall", "selection_table", 0);
  const std::string odd = RunAcrossNodes(cluster, dir, {{"OHIO_SELECTION", "sometimes"}}, {"alltoall:65536"}, "odd");
  ExpectAllOk(odd, 4);
  EXPECT_EQ(Stats(odd), std::make_pair(0L, 4L)) << odd;
  const std::string warning =
      "ohio: OHIO_SELECTION=sometimes is neither 'table' nor 'always': the selection table decides which calls ohio "
      "serves";
  const size_t first = odd.find(warning);
  EXPECT_NE(first, std::string::npos) << odd;
  EXPECT_EQ(odd.find(warning, first + 1), std::string::npos) << "said more than once\n" << odd;
}

// MPI_Ialltoall is the table's by default: across nodes 8 KiB per rank pair served, 64 KiB handed
// back (ohiod takes longer to move it than a program's computation hides); OHIO_IALLTOALL_MIN_BYTES,
// set, alone decides.
TEST(Selection, IalltoallDecidedByTheTableUnlessTheThresholdIsSet) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::string out = RunAcrossNodes(cluster, dir, {}, {"ialltoall:8192", "ialltoall:65536"}, "default");
  ExpectAllOk(out, 4);
  EXPECT_EQ(Stats(out, "MPI_Ialltoall"), std::make_pair(4L, 4L)) << out;
  EXPECT_NE(out.find("rank 0: MPI_Ialltoall: 1 handed to the MPI library by the selection table: the selection "
                     "table hands ialltoall on 2 nodes x 2 ranks (tcp) to the MPI library "
                     "(no row matches)"),
            std::string::npos)
      << out;
  ExpectEveryDaemonCounted(cluster, 1, "ialltoall", "selection_table", 1);
  const std::string threshold =
      RunAcrossNodes(cluster, dir, {{"OHIO_IALLTOALL_MIN_BYTES", "0"}}, {"ialltoall:65536"}, "threshold");
  ExpectAllOk(threshold, 4);
  EXPECT_EQ(Stats(threshold, "MPI_Ialltoall"), std::make_pair(4L, 0L)) << threshold;
}

}  // namespace
}  // namespace ohio::testing
