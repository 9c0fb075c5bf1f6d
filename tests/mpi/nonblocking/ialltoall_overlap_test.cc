// MPI_Ialltoall overlapped with a computation that leaves the rank's core (a GPU kernel, I/O),
// under real mpirun (Open MPI) with libohio_mpi preloaded: tests/mpi/ialltoall_overlap_check.c
// posts the call and then only sleeps and reads its receive buffer, calling no MPI function.
//
// What is asserted, and why it holds by design: ohiod moves a served MPI_Ialltoall itself, on
// one node reading every rank's row and writing every rank's column in the ranks' own address
// spaces (daemon/engine/nonblocking_alltoall.h), across nodes playing the ranks' part of the
// group's rounds up to the copy-out into each receive buffer
// (daemon/engine/nonblocking_across_nodes_alltoall.h), and publishes the outcome in the group's
// segment. Nothing is left for the rank to copy when it completes the request. So, with every
// rank asleep:
//   - every received byte is right before the rank makes any MPI call after MPI_Ialltoall
//     (filled_before_any_mpi_call=T/T; the receive buffer starts as the complement of what is
//     expected, so each byte was written);
//   - the first MPI_Test completes the request (first_test_flag=1): ohiod published the call
//     complete before the rank woke;
//   - the bytes are still right after it, and OHIO_STATS and the daemons' counters show that
//     ohiod served every call.
// A negative control runs the same program with ohio not serving MPI_Ialltoall: Open MPI's own
// (libnbc over ob1/vader) moves data only inside MPI calls. The program staggers the posts, after
// a first blocking MPI_Alltoall that sets up the communicator (so that no setup inside
// MPI_Ialltoall lines the ranks up again): rank 0 posts 100 ms before rank 1 and 300 ms before
// rank 3, so the others' blocks cannot all have reached it inside its MPI_Ialltoall, and it
// sleeps through the deadline with its buffer not full (seen: its own block only). That is
// asserted: the program tells the two apart. The other ranks are only reported: a rank that
// posts after others may receive some of their blocks inside its own MPI_Ialltoall (seen: a
// second block of 4097 bytes), and the first MPI_Test, which progresses, may complete a request
// either way (seen: the last rank's).
// No timing is asserted: a rank sleeps 300 ms at a time until its buffer is full or a deadline
// far beyond what the call takes; the assertions are about state.
#include <gtest/gtest.h>

#include <iostream>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/process.h"
#include "tests/mpi/mpi_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(60);
constexpr const char* kCheck = "ialltoall_overlap_check";
// Sizes the built-in selection table serves MPI_Ialltoall at, one odd so that no block is
// aligned: on one node from 32 KiB to 256 KiB, across nodes up to 32 KiB.
const std::vector<long> kOneNodeBytes = {262144, 131075};
const std::vector<long> kAcrossNodesBytes = {32768, 4097};
// The program's first call, a blocking MPI_Alltoall of one int: the built-in table serves it
// across nodes (up to 4 KiB) and hands it to the library on one node (from 512 B there).
constexpr size_t kBlockingCallsServedOnOneNode = 0;
constexpr size_t kBlockingCallsServedAcrossNodes = 1;
constexpr const char* kSleepMs = "300";
// Rank r posts r times this after the others left the barrier: rank 0 first, alone.
constexpr const char* kStaggerMs = "100";
// How long a served call may take before the program gives up and tells what it saw: both
// calls' within kDeadline, so that a call not moved is reported, not killed with mpirun.
constexpr const char* kServedDeadlineMs = "20000";
// How long the negative control sleeps: long enough for any progress the library makes alone.
constexpr const char* kUnservedDeadlineMs = "1500";

// The negative control keeps every MPI_Ialltoall in the library: none is this big.
const std::pair<std::string, std::string> kLibraryKeepsEveryIalltoall = {"OHIO_IALLTOALL_MIN_BYTES", "1073741824"};

std::vector<std::string> CheckArgs(const char* deadline_ms, const std::vector<long>& bytes_per_rank) {
  std::vector<std::string> args = {kSleepMs, deadline_ms, kStaggerMs};
  for (long b : bytes_per_rank) args.push_back(std::to_string(b));
  return args;
}

// One rank's line for one call of the check program.
struct CallReport {
  int rank = -1;
  long bytes_per_rank = -1;
  long filled_before = -1;
  long total = -1;
  int first_test_flag = -1;
  long verified = -1;
  std::string where;  // to print when an expectation on it fails: the rank, the call, the output
};

// Every rank's report of every call, each of the size asked for (a gtest expectation); a report
// missing is left out.
std::vector<CallReport> Reports(const std::string& out, int ranks, const std::vector<long>& bytes_per_rank) {
  std::vector<CallReport> reports;
  for (int rank = 0; rank < ranks; ++rank) {
    for (size_t call = 0; call < bytes_per_rank.size(); ++call) {
      const std::regex line("rank " + std::to_string(rank) + ": call " + std::to_string(call) +
                            ": bytes_per_rank=(\\d+) filled_before_any_mpi_call=(\\d+)/(\\d+) sleeps=\\d+ "
                            "first_test_flag=(\\d) verified_after=(\\d+)/\\d+");
      std::smatch m;
      const std::string where = "rank " + std::to_string(rank) + " call " + std::to_string(call) + "\n" + out;
      if (!std::regex_search(out, m, line)) {
        ADD_FAILURE() << "no report of " << where;
        continue;
      }
      const CallReport r = {rank, std::stol(m[1]), std::stol(m[2]), std::stol(m[3]), std::stoi(m[4]), std::stol(m[5]),
                            where};
      EXPECT_EQ(r.bytes_per_rank, bytes_per_rank[call]) << where;
      EXPECT_EQ(r.total, bytes_per_rank[call] * ranks) << where;
      reports.push_back(r);
    }
  }
  return reports;
}

// Every rank's every call: filled while it slept, complete at the first MPI_Test, right after.
void ExpectOverlappedWhileAsleep(const std::string& out, int ranks, const std::vector<long>& bytes_per_rank) {
  ExpectAllOk(out, ranks);
  for (const CallReport& r : Reports(out, ranks, bytes_per_rank)) {
    EXPECT_EQ(r.filled_before, r.total) << r.where;
    EXPECT_EQ(r.first_test_flag, 1) << r.where;
    EXPECT_EQ(r.verified, r.total) << r.where;
  }
  const auto [served, fell] = Stats(out, "MPI_Ialltoall");
  EXPECT_EQ(served, static_cast<long>(bytes_per_rank.size()) * ranks) << out;
  EXPECT_EQ(fell, 0) << out;
}

TEST(MpiIalltoallOverlap, FilledWhileTheRanksSleepOnOneNode) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const int ranks = 4;
  Process run(MpiRun(kOpenMpi, ranks, {daemon.socket()}, ranks, {}, kCheck,
                     CheckArgs(kServedDeadlineMs, kOneNodeBytes)),
              dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << daemon.Log();
  ExpectOverlappedWhileAsleep(run.Output(), ranks, kOneNodeBytes);
  EXPECT_EQ(QueryCounters(daemon.admin_socket()).collectives_served(),
            kOneNodeBytes.size() + kBlockingCallsServedOnOneNode)
      << daemon.Log();
}

TEST(MpiIalltoallOverlap, FilledWhileTheRanksSleepAcrossTwoNodes) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const int ranks = 4;
  Process run(MpiRun(kOpenMpi, ranks, ControlSockets(cluster), 2, {}, kCheck,
                     CheckArgs(kServedDeadlineMs, kAcrossNodesBytes)),
              dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << cluster.Logs();
  ExpectOverlappedWhileAsleep(run.Output(), ranks, kAcrossNodesBytes);
  for (uint32_t n = 0; n < 2; ++n) {
    EXPECT_EQ(QueryCounters(cluster.node(n).admin_socket()).collectives_served(),
              kAcrossNodesBytes.size() + kBlockingCallsServedAcrossNodes)
        << "node " << n << "\n"
        << cluster.Logs();
  }
}

// The same program, the calls left to Open MPI: after the sleeps rank 0's receive buffer is not
// full (the library moved nothing to it while no MPI function was called), and every rank's
// data is right once its request is completed. What each rank saw is printed.
TEST(MpiIalltoallOverlap, NotFilledWhileTheRanksSleepWhenTheLibraryKeepsTheCall) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const int ranks = 4;
  Process run(MpiRun(kOpenMpi, ranks, {daemon.socket()}, ranks, {kLibraryKeepsEveryIalltoall}, kCheck,
                     CheckArgs(kUnservedDeadlineMs, kOneNodeBytes)),
              dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << daemon.Log();
  const std::string out = run.Output();
  ExpectAllOk(out, ranks);
  for (const CallReport& r : Reports(out, ranks, kOneNodeBytes)) {
    if (r.rank == 0) EXPECT_LT(r.filled_before, r.total) << r.where;
    EXPECT_EQ(r.verified, r.total) << r.where;
    std::cout << "Open MPI alone: rank " << r.rank << ", " << r.bytes_per_rank << " bytes per rank: "
              << r.filled_before << " of " << r.total << " bytes in place before any MPI call, first MPI_Test flag "
              << r.first_test_flag << "\n";
  }
  const auto [served, fell] = Stats(out, "MPI_Ialltoall");
  EXPECT_EQ(served, 0) << out;
  EXPECT_EQ(fell, static_cast<long>(kOneNodeBytes.size()) * ranks) << out;
}

}  // namespace
}  // namespace ohio::testing
