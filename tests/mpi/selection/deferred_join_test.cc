// A communicator joins its group at the first call the selection table serves, not at its
// first call (client/mpi/deferred_join.h). Real mpirun jobs of tests/mpi/selection/selection_check.c
// against real daemons, every received byte checked by the program:
//  - a communicator whose calls the table hands back never makes ohiod create a group, and its
//    hand-backs still reach ohiod's counters exactly; one served call later makes exactly one;
//  - a table a SIGHUP gives new groups reaches the communicators a running job creates after it,
//    while one set up before keeps the table its ranks agreed on;
//  - ranks whose daemons hold different tables join at once, and the daemons' refusal (naming
//    both tables) hands every call back on every rank.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/process.h"
#include "tests/harness/selection_tables.h"
#include "tests/mpi/mpi_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(120);
constexpr const char* kCheck = "selection/selection_check";
// 64 B per rank pair to the library, 4 KiB to ohio.
constexpr char kSmallToLibrary[] = "alltoall any any any 1-1KiB mpi\nany any any any any ohio\n";
constexpr char kAllToLibrary[] = "any any any any any mpi\n";
constexpr char kAllToOhio[] = "any any any any any ohio\n";

size_t OpenGroups(const std::string& admin_socket) {
  const StatusQuery q = QueryStatus(admin_socket);
  EXPECT_TRUE(q.ok) << q.error;
  return static_cast<size_t>(q.reply.group_size());
}

void ExpectNeverJoinedThenOneJoin(Binding binding, const std::string& name) {
  TempDir dir;
  const std::string table = dir.file("selection.table");
  std::ofstream(table) << kSmallToLibrary;
  Daemon daemon(dir, {"--selection-table", table});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();

  Process handed(MpiRun(kOpenMpi, 2, {daemon.socket()}, 2, {}, kCheck, {"alltoall:64", "alltoall:64", "alltoall:64"},
                        binding),
                 dir.file(name + "-handed.out"));
  ASSERT_EQ(handed.Wait(kDeadline), 0) << handed.Output() << daemon.Log();
  ExpectAllOk(handed.Output(), 2);
  EXPECT_EQ(Stats(handed.Output()), std::make_pair(0L, 6L)) << handed.Output();
  admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(c.groups_created(), 0u) << "no call served, no group";
  EXPECT_EQ(c.collectives_served(), 0u);
  EXPECT_EQ(c.engine_wakeups(), 0u);
  // Counted once per call (by the node's first rank), sent at MPI_Finalize.
  EXPECT_EQ(HandedBack(c, "alltoall", "selection_table"), 3) << c.DebugString();
  EXPECT_EQ(OpenGroups(daemon.admin_socket()), 0u);

  Process mixed(MpiRun(kOpenMpi, 2, {daemon.socket()}, 2, {}, kCheck, {"alltoall:64", "alltoall:4096", "alltoall:64"},
                       binding),
                dir.file(name + "-mixed.out"));
  ASSERT_EQ(mixed.Wait(kDeadline), 0) << mixed.Output() << daemon.Log();
  ExpectAllOk(mixed.Output(), 2);
  EXPECT_EQ(Stats(mixed.Output()), std::make_pair(2L, 4L)) << mixed.Output();
  c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(c.groups_created(), 1u) << "joined at the served call";
  EXPECT_EQ(c.collectives_served(), 1u);
  // The first 64 B call counted without a group, the last through it.
  EXPECT_EQ(HandedBack(c, "alltoall", "selection_table"), 5) << c.DebugString();
}

TEST(DeferredJoin, HandedBackCommunicatorNeverJoinsThroughTheShim) {
  ExpectNeverJoinedThenOneJoin(Binding::kShim, "shim");
}

TEST(DeferredJoin, HandedBackCommunicatorNeverJoinsThroughTheComponent) {
  ExpectNeverJoinedThenOneJoin(Binding::kComponent, "component");
}

TEST(DeferredJoin, SighupReachesCommunicatorsCreatedAfterItInARunningJob) {
  TempDir dir;
  const std::string table = dir.file("selection.table");
  std::ofstream(table) << kAllToLibrary;
  Daemon daemon(dir, {"--selection-table", table});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const std::string go = dir.file("go");
  // MPI_COMM_WORLD is set up under the first table; after the SIGHUP it keeps it, and a new
  // duplicate gets the new one.
  Process run(MpiRun(kOpenMpi, 2, {daemon.socket()}, 2, {}, kCheck,
                     {"alltoall:64", "await:" + go, "alltoall:64", "dup", "alltoall:64", "alltoall:64"}),
              dir.file("mpirun.out"));
  ASSERT_TRUE(run.WaitForOutput("awaiting " + go, kDeadline)) << run.Output() << daemon.Log();
  ASSERT_TRUE(ReloadSelectionTable(daemon, table, kAllToOhio)) << daemon.Log();
  std::ofstream(go) << "go\n";
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << daemon.Log();
  ExpectAllOk(run.Output(), 2);
  EXPECT_EQ(Stats(run.Output()), std::make_pair(4L, 4L)) << run.Output();
  const admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(c.groups_created(), 1u);
  EXPECT_EQ(c.collectives_served(), 2u);
  EXPECT_EQ(HandedBack(c, "alltoall", "selection_table"), 2) << c.DebugString();
}

TEST(DeferredJoin, RanksWhoseDaemonsHoldDifferentTablesJoinAtOnceAndAreToldWhy) {
  TempDir dir;
  const std::string table = dir.file("n1-selection.table");
  std::ofstream(table) << kAllToOhio;
  Cluster cluster(dir, 2);
  cluster.AddFlags(1, {"--selection-table", table});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  Process run(MpiRun(kOpenMpi, 4, ControlSockets(cluster), 2, {}, kCheck, {"alltoall:64", "alltoall:4096"}),
              dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << cluster.Logs();
  const std::string out = run.Output();
  ExpectAllOk(out, 4);
  EXPECT_EQ(Stats(out), std::make_pair(0L, 8L)) << out;
  EXPECT_NE(out.find("decide differently which calls ohio serves"), std::string::npos) << out;
  for (uint32_t n = 0; n < 2; ++n) {
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    EXPECT_EQ(c.groups_created(), 1u) << "node " << n;
    EXPECT_EQ(c.collectives_served(), 0u) << "node " << n;
  }
}

}  // namespace
}  // namespace ohio::testing
