// An unmodified MPI program at MPI_THREAD_MULTIPLE (tests/mpi/threads/thread_multiple_check.c) whose
// ranks each run two threads calling MPI_Alltoall, MPI_Ialltoall + MPI_Wait and MPI_Alltoallv at the
// same time,
// each on a communicator of its own, started in opposite orders on even and odd ranks (where a
// client holding one lock over a call would deadlock): through the preloaded shim under Open MPI
// and MPICH and through Open MPI's collective component, on one node and across 2 emulated
// nodes, with no setting asking for it (a job at MPI_THREAD_MULTIPLE is served by default).
// Every byte is checked by the program; every call is served, by OHIO_STATS's counts and by
// every daemon's own; the job's deadline turns a deadlock into a failure. With the selection
// table deciding, the calls both threads hand back at once are counted exactly.
#include <gtest/gtest.h>

#include <string>

#include "tests/harness/cluster.h"
#include "tests/harness/process.h"
#include "tests/mpi/mpi_job.h"

namespace ohio::testing {
namespace {

// The whole job: a deadlock ends here, as a failure.
constexpr auto kDeadline = std::chrono::seconds(90);
constexpr const char* kCheck = "threads/thread_multiple_check";
constexpr int kIterations = 5;
// Calls of each function per thread: one per size of the check program (4) per iteration.
constexpr int kCallsPerThread = kIterations * 4;
constexpr int kThreads = 2;
constexpr int kFunctions = 3;  // MPI_Alltoall, MPI_Ialltoall, MPI_Alltoallv

struct Case {
  Mpi mpi;
  Binding binding;
  uint32_t nodes;
};

std::string NameOf(const Case& c) {
  return std::string(c.mpi.name) + (c.binding == Binding::kShim ? "_shim_" : "_component_") +
         std::to_string(c.nodes) + "nodes";
}

class ThreadMultiple : public ::testing::TestWithParam<Case> {};

TEST_P(ThreadMultiple, TwoThreadsOnTwoCommunicatorsServedWithVerifiedData) {
  const Case c = GetParam();
  constexpr int kRanks = 4;
  TempDir dir;
  Cluster cluster(dir, c.nodes);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // Every call served whatever the selection table would choose: the test is about how ohio
  // serves threads, not which calls it takes.
  Process run(MpiRun(c.mpi, kRanks, ControlSockets(cluster), kRanks / static_cast<int>(c.nodes),
                     {kServeEveryCall, {"OHIO_IALLTOALL_MIN_BYTES", "0"}}, kCheck, {std::to_string(kIterations)},
                     c.binding),
              dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << cluster.Logs();
  const std::string out = run.Output();
  ExpectAllOk(out, kRanks);
  for (int r = 0; r < kRanks; ++r) {
    for (int comm = 0; comm < kThreads; ++comm) {
      EXPECT_NE(out.find("rank " + std::to_string(r) + ": comm " + std::to_string(comm) +
                         ": alltoalls=" + std::to_string(kCallsPerThread) +
                         " ialltoalls=" + std::to_string(kCallsPerThread) +
                         " alltoallvs=" + std::to_string(kCallsPerThread) + "\n"),
                std::string::npos)
          << out;
    }
  }
  const long every_call = long{kThreads} * kCallsPerThread * kRanks;
  EXPECT_EQ(Stats(out, "MPI_Alltoall"), std::make_pair(every_call, 0L)) << out;
  EXPECT_EQ(Stats(out, "MPI_Ialltoall"), std::make_pair(every_call, 0L)) << out;
  EXPECT_EQ(Stats(out, "MPI_Alltoallv"), std::make_pair(every_call, 0L)) << out;
  // Each daemon moved every call of both communicators: the three functions, both threads.
  for (uint32_t n = 0; n < c.nodes; ++n) {
    EXPECT_EQ(QueryCounters(cluster.node(n).admin_socket()).collectives_served(),
              uint64_t{kFunctions} * kThreads * kCallsPerThread)
        << "node " << n << "\n" << cluster.Logs();
  }
}

// ohiod's count of calls of `function` handed to the MPI library for `reason`; -1 if absent.
long HandedBack(const admin::CountersReply& c, const std::string& function, const std::string& reason) {
  for (const auto& h : c.handed_back()) {
    if (h.function() == function && h.reason() == reason) return static_cast<long>(h.count());
  }
  return -1;
}

// "ohio:   of those, N <function> calls handed to the MPI library by the selection table"; 0
// if absent (OHIO_STATS prints it only when N is not 0).
long HandedBackByTable(const std::string& out, const std::string& function) {
  const std::string head = "ohio:   of those, ";
  const std::string tail = " " + function + " calls handed to the MPI library by the selection table";
  for (size_t at = out.find(head); at != std::string::npos; at = out.find(head, at + 1)) {
    const size_t number = at + head.size();
    const size_t end = out.find(' ', number);
    if (out.compare(end, tail.size(), tail) == 0) return std::stol(out.substr(number, end - number));
  }
  return 0;
}

// The selection table as it comes (on one node it serves some of the check's sizes and hands
// the others back): both threads' calls handed back at once are counted exactly, by the
// lock-free tallies of the kept verdicts (OHIO_STATS) and by ohiod (its handed-back counters),
// and the calls served and handed back add up to every call made.
class ThreadMultipleTable : public ::testing::TestWithParam<Binding> {};

TEST_P(ThreadMultipleTable, ServedAndHandedBackAddUpToEveryCall) {
  constexpr int kRanks = 4;
  TempDir dir;
  Cluster cluster(dir, 1);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  Process run(MpiRun(kOpenMpi, kRanks, ControlSockets(cluster), kRanks, {}, kCheck, {std::to_string(kIterations)},
                     GetParam()),
              dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << cluster.Logs();
  const std::string out = run.Output();
  ExpectAllOk(out, kRanks);
  const long every_call = long{kThreads} * kCallsPerThread * kRanks;
  const admin::CountersReply counters = QueryCounters(cluster.node(0).admin_socket());
  uint64_t served_calls = 0;
  for (const auto& [function, counted_as] : {std::make_pair("MPI_Alltoall", "alltoall"),
                                             std::make_pair("MPI_Ialltoall", "ialltoall")}) {
    const auto [served, fell] = Stats(out, function);
    EXPECT_EQ(served + fell, every_call) << function << "\n" << out;
    EXPECT_GT(served, 0) << function << "\n" << out;
    EXPECT_GT(fell, 0) << function << "\n" << out;
    // Every call that went to the library went by the table's verdict, none for another reason.
    EXPECT_EQ(HandedBackByTable(out, function), fell) << function << "\n" << out;
    // ohiod counts a call once for the node (its first rank counts a hand-back).
    EXPECT_EQ(HandedBack(counters, counted_as, "selection_table"), fell / kRanks) << counters.DebugString();
    served_calls += static_cast<uint64_t>(served / kRanks);
  }
  // MPI_Alltoallv's verdict depends on each rank's own largest block: the ranks whose blocks
  // the table hands back opt out of the call (here every rank alike), and all of them run it in
  // the library; ohiod counts each such call once as opted out.
  const auto [served, fell] = Stats(out, "MPI_Alltoallv");
  EXPECT_EQ(served + fell, every_call) << out;
  EXPECT_GT(served, 0) << out;
  EXPECT_EQ(HandedBack(counters, "alltoallv", "rank_opted_out"), fell / kRanks) << counters.DebugString();
  served_calls += static_cast<uint64_t>(served / kRanks);
  EXPECT_EQ(counters.collectives_served(), served_calls) << out << counters.DebugString();
}

INSTANTIATE_TEST_SUITE_P(Bindings, ThreadMultipleTable, ::testing::Values(Binding::kShim, Binding::kComponent),
                         [](const auto& info) { return info.param == Binding::kShim ? "shim" : "component"; });

INSTANTIATE_TEST_SUITE_P(Bindings, ThreadMultiple,
                         ::testing::Values(Case{kOpenMpi, Binding::kShim, 1}, Case{kOpenMpi, Binding::kShim, 2},
                                           Case{kMpich, Binding::kShim, 1}, Case{kMpich, Binding::kShim, 2},
                                           Case{kOpenMpi, Binding::kComponent, 1},
                                           Case{kOpenMpi, Binding::kComponent, 2}),
                         [](const auto& info) { return NameOf(info.param); });

}  // namespace
}  // namespace ohio::testing
