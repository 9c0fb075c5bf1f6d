// MPI_Ialltoall of an unmodified MPI program (tests/mpi/ialltoall_check.c) under real mpirun,
// Open MPI and MPICH, with libohio_mpi preloaded: completed by Waitall and Testany beside Isend
// and Irecv, by Wait out of order with several outstanding, by Test, Request_get_status,
// Waitsome and Testsome, with a strided receive type; Request_free and Cancel refused as the
// standard says. Every byte is checked by the program; OHIO_STATS shows who served the calls.
// ohiod serves every one, on one node and across 2 emulated nodes (where the daemons move the
// data through the group's rounds, a blocking MPI_Alltoall between outstanding calls keeping
// its order). MPI_Ialltoallv likewise, on one node and across 2 emulated nodes with uneven ranks
// per node (tests/mpi/ialltoallv_check.c: a blocking MPI_Alltoallv between outstanding calls
// keeping its order there too), and the Starts of an MPI_Alltoall_init under MPICH
// (tests/mpi/alltoall_init_check.c). A datatype ohio has no layout for, on one rank or all, is
// packed by the MPI library and served (tests/mpi/ialltoall_pair_check.c).
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "tests/harness/cluster.h"
#include "tests/harness/process.h"
#include "tests/mpi/mpi_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(120);
constexpr const char* kCheck = "ialltoall_check";
// Calls per rank of the check program: 4 iterations of part 1, then 1 + 3 + 2 + 2 + 1, and 1 strict.
constexpr int kIterations = 4;
constexpr int kCalls = kIterations + 9;

class MpiIalltoall : public ::testing::TestWithParam<Mpi> {};

TEST_P(MpiIalltoall, ServedOnOneNodeBesideTheLibrarysRequests) {
  const Mpi mpi = GetParam();
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const int ranks = 3;
  Process run(MpiRun(mpi, ranks, {daemon.socket()}, ranks, {kNonblockingAll, kServeEveryCall}, kCheck,
                     {"4096", std::to_string(kIterations), "2000", "strict"}),
              dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << daemon.Log();
  const std::string out = run.Output();
  ExpectAllOk(out, ranks);
  for (int r = 0; r < ranks; ++r) {
    EXPECT_NE(out.find("rank " + std::to_string(r) + ": ialltoalls=" + std::to_string(kCalls + 1)), std::string::npos)
        << out;
  }
  const auto [served, fell] = Stats(out, "MPI_Ialltoall");
  EXPECT_EQ(served, (kCalls + 1) * ranks) << out;
  EXPECT_EQ(fell, 0) << out;
  // Refusing the free and the cancel said why, on every rank.
  EXPECT_NE(out.find("ohio: MPI_Request_free: the request is a nonblocking collective (MPI_Ialltoall)"),
            std::string::npos)
      << out;
}

TEST_P(MpiIalltoall, ServedAcrossNodesByTheDaemons) {
  const Mpi mpi = GetParam();
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const int ranks = 4;
  Process run(MpiRun(mpi, ranks, ControlSockets(cluster), 2, {kNonblockingAll, kServeEveryCall}, kCheck,
                     {"1000", "2", "500"}),
              dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << cluster.Logs();
  const std::string out = run.Output();
  ExpectAllOk(out, ranks);
  for (int r = 0; r < ranks; ++r) {
    EXPECT_NE(out.find("rank " + std::to_string(r) + ": ialltoalls=11"), std::string::npos) << out;
  }
  const auto [served, fell] = Stats(out, "MPI_Ialltoall");
  EXPECT_EQ(served, (2 + 9) * ranks) << out;
  EXPECT_EQ(fell, 0) << out;
  // Each daemon served them all, besides whatever blocking alltoalls the shim served.
  for (uint32_t n = 0; n < 2; ++n) {
    const auto [blocking, blocking_fell] = Stats(out, "MPI_Alltoall");
    EXPECT_EQ(QueryCounters(cluster.node(n).admin_socket()).collectives_served(),
              static_cast<uint64_t>(2 + 9 + blocking / ranks))
        << out;
  }
}

// By default the selection table decides MPI_Ialltoall: 128 KiB per rank pair is served (the
// default table serves it from 32 KiB to 256 KiB on one node). OHIO_IALLTOALL_MIN_BYTES, set, decides
// instead, and calls below it stay with the library: alike on every rank, data checked, the
// reason printed.
TEST_P(MpiIalltoall, NonblockingDecidedByTheTableOrTheThresholdAskedFor) {
  const Mpi mpi = GetParam();
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const int ranks = 3;
  for (const auto& [threshold, bytes] : {std::pair<const char*, const char*>{"", "131072"}, {"8192", "4096"}}) {
    std::vector<std::pair<std::string, std::string>> env;
    if (*threshold != '\0') env.push_back({"OHIO_IALLTOALL_MIN_BYTES", threshold});
    Process run(MpiRun(mpi, ranks, {daemon.socket()}, ranks, env, kCheck, {bytes, "2", "500"}),
                dir.file(std::string("mpirun") + threshold + ".out"));
    ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << daemon.Log();
    const std::string out = run.Output();
    ExpectAllOk(out, ranks);
    const auto [served, fell] = Stats(out, "MPI_Ialltoall");
    if (*threshold == '\0') {
      EXPECT_EQ(served, (2 + 9) * ranks) << out;
      EXPECT_EQ(fell, 0) << out;
      continue;
    }
    EXPECT_EQ(served, 0) << out;
    EXPECT_EQ(fell, (2 + 9) * ranks) << out;
    EXPECT_NE(out.find("MPI_Ialltoall: 11 handed back: the call's 4096 bytes per rank are below "
                       "OHIO_IALLTOALL_MIN_BYTES = 8192"),
              std::string::npos)
        << out;
  }
}

// A datatype ohio has no layout for (MPI_DOUBLE_INT, a pair type with holes) in MPI_Ialltoall
// and MPI_Ialltoallv (tests/mpi/ialltoall_pair_check.c), on every rank and on rank 0 alone (the
// others send and receive the same pairs with a struct type ohio has a layout for): the library
// packs and unpacks that rank's pairs and ohiod moves every call, in place too; no rank opts out
// of a nonblocking call alone (the others, started through ohio, would never meet its library
// call). Every pair and every padding byte checked, under a deadline.
TEST_P(MpiIalltoall, ServedWhetherEveryRankOrOneAloneHasNoLayout) {
  const Mpi mpi = GetParam();
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const int ranks = 3;
  const int calls = 4;
  for (const char* who : {"all", "rank0"}) {
    Process run(MpiRun(mpi, ranks, {daemon.socket()}, ranks, {kServeEveryCall}, "ialltoall_pair_check",
                       {"300", who}),
                dir.file(std::string("mpirun-pair-") + who + ".out"));
    ASSERT_EQ(run.Wait(kDeadline), 0) << who << "\n" << run.Output() << daemon.Log();
    const std::string out = run.Output();
    ExpectAllOk(out, ranks);
    for (int r = 0; r < ranks; ++r) {
      EXPECT_NE(out.find("rank " + std::to_string(r) + ": ialltoalls=" + std::to_string(calls) + " ialltoallvs=1"),
                std::string::npos)
          << out;
    }
    const auto [served, fell] = Stats(out, "MPI_Ialltoall");
    EXPECT_EQ(served, calls * ranks) << who << "\n" << out;
    EXPECT_EQ(fell, 0) << who << "\n" << out;
    const auto [served_v, fell_v] = Stats(out, "MPI_Ialltoallv");
    EXPECT_EQ(served_v, ranks) << who << "\n" << out;
    EXPECT_EQ(fell_v, 0) << who << "\n" << out;
  }
}

// MPI_Ialltoallv (tests/mpi/ialltoallv_check.c): counts of every pair's own with zeros,
// displacements out of order, beside Isend/Irecv, in MPI_INT, strided, in place. Moved by
// ohiod when OHIO_IALLTOALL_MIN_BYTES is set at all; otherwise the selection table decides, and
// the default table's verdict for ialltoallv depends on the bytes, which differ between ranks:
// the library keeps every call, alike on every rank.
constexpr const char* kVectorCheck = "ialltoallv_check";
constexpr int kVectorCalls = 3 + 2 + 1 + 1 + 2;  // 3 iterations of part 1, then parts 2, 3, 4, 5

TEST_P(MpiIalltoall, VectorServedOnOneNodeWhenAskedAndKeptByTheLibraryOtherwise) {
  const Mpi mpi = GetParam();
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const int ranks = 3;
  for (const bool asked : {true, false}) {
    std::vector<std::pair<std::string, std::string>> env;
    if (asked) env.push_back(kNonblockingAll);
    Process run(MpiRun(mpi, ranks, {daemon.socket()}, ranks, env, kVectorCheck, {"300", "3"}),
                dir.file(std::string("mpirun-v-") + (asked ? "asked" : "not") + ".out"));
    ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << daemon.Log();
    const std::string out = run.Output();
    ExpectAllOk(out, ranks);
    for (int r = 0; r < ranks; ++r) {
      EXPECT_NE(out.find("rank " + std::to_string(r) + ": ialltoallvs=" + std::to_string(kVectorCalls)),
                std::string::npos)
          << out;
    }
    const auto [served, fell] = Stats(out, "MPI_Ialltoallv");
    EXPECT_EQ(served, asked ? kVectorCalls * ranks : 0) << out;
    EXPECT_EQ(fell, asked ? 0 : kVectorCalls * ranks) << out;
    if (!asked) {
      EXPECT_NE(out.find("MPI_Ialltoallv: 9 handed to the MPI library by the selection table: the selection "
                         "table's verdict for ialltoallv on 1 node x 3 ranks (tcp) depends on the bytes, which "
                         "differ between ranks, and a rank cannot opt out of a nonblocking call alone: the MPI "
                         "library"),
                std::string::npos)
          << out;
    }
  }
}

// Counts that disagree are the program's fault: MPI_ERR_COUNT from MPI_Wait on every rank
// with ohiod's one text, and the next call goes through.
TEST_P(MpiIalltoall, VectorMismatchReportedAlikeOnOneNode) {
  const Mpi mpi = GetParam();
  TempDir dir;
  {
    Daemon daemon(dir);
    ASSERT_TRUE(daemon.Start()) << daemon.Log();
    const int ranks = 3;
    Process run(MpiRun(mpi, ranks, {daemon.socket()}, ranks, {kNonblockingAll, kServeEveryCall}, kVectorCheck,
                       {"300", "1", "mismatch"}),
                dir.file("mpirun-v-mismatch.out"));
    ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << daemon.Log();
    const std::string out = run.Output();
    ExpectAllOk(out, ranks);
    const std::regex said("ohio: MPI_Ialltoallv failed: ranks disagree on the counts of this alltoallv: rank 2 sends "
                          "(\\d+) bytes to rank 0, which expects (\\d+)");
    int reports = 0;
    for (auto it = std::sregex_iterator(out.begin(), out.end(), said); it != std::sregex_iterator(); ++it, ++reports) {
      EXPECT_EQ(std::stol((*it)[1]), std::stol((*it)[2]) + 1) << out;
    }
    EXPECT_EQ(reports, ranks) << out;
    // 1 + 2 + 1 + 1 + 2 calls, the mismatch and the one after it: all but the mismatch served.
    const auto [served, fell] = Stats(out, "MPI_Ialltoallv");
    EXPECT_EQ(served, 8 * ranks) << out;
    EXPECT_EQ(fell, 0) << out;
  }
}

// Across 2 emulated nodes, 3 ranks on one and 2 on the other, the daemons move every
// MPI_Ialltoallv through the group's vector rounds (the count digest: a pair that disagrees is
// MPI_ERR_COUNT on every rank with the same text), and the blocking MPI_Alltoallv between
// outstanding calls waits for them.
TEST_P(MpiIalltoall, VectorServedAcrossNodesByTheDaemons) {
  const Mpi mpi = GetParam();
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const int ranks = 5;
  Process run(MpiRun(mpi, ranks, ControlSockets(cluster), 3, {kNonblockingAll, kServeEveryCall}, kVectorCheck,
                     {"300", "1", "mismatch"}),
              dir.file("mpirun-v-across.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << cluster.Logs();
  const std::string out = run.Output();
  ExpectAllOk(out, ranks);
  // The first disagreeing pair, named alike on every rank of both nodes.
  const std::regex said("ohio: MPI_Ialltoallv failed: rank 4 sends (\\d+) bytes to rank 0, which expects (\\d+) from it");
  int reports = 0;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), said); it != std::sregex_iterator(); ++it, ++reports) {
    EXPECT_EQ(std::stol((*it)[1]), std::stol((*it)[2]) + 1) << out;
  }
  EXPECT_EQ(reports, ranks) << out;
  // 1 + 2 + 1 + 1 + 2 calls, the mismatch and the one after it: all but the mismatch served.
  const auto [served, fell] = Stats(out, "MPI_Ialltoallv");
  EXPECT_EQ(served, 8 * ranks) << out;
  EXPECT_EQ(fell, 0) << out;
  const auto [blocking, blocking_fell] = Stats(out, "MPI_Alltoallv");
  EXPECT_EQ(blocking, ranks) << out;
  for (uint32_t n = 0; n < 2; ++n) {
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    EXPECT_EQ(c.collectives_served(), 8u + 1u) << "node " << n;
    EXPECT_EQ(c.collectives_failed(), 1u) << "node " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Launchers, MpiIalltoall, ::testing::Values(kOpenMpi, kMpich),
                         [](const auto& info) { return std::string(info.param.name); });

// MPI_Alltoall_init (tests/mpi/alltoall_init_check.c), MPICH only: every Start is posted like
// an MPI_Ialltoall when asked for, else (1000 bytes per rank pair, which the default selection
// table hands back) started by the library, alike on every rank; the
// request survives every Wait, Waitall and Test as the persistent request it is.
TEST(MpiAlltoallInit, EveryStartServedWhenAskedAndStartedByTheLibraryOtherwise) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const int ranks = 3;
  const int starts = 3 + 2 * 2 + 1 + 2 + 2;
  for (const bool asked : {true, false}) {
    std::vector<std::pair<std::string, std::string>> env;
    if (asked) env.push_back(kNonblockingAll);
    Process run(MpiRun(kMpich, ranks, {daemon.socket()}, ranks, env, "alltoall_init_check", {"1000"}),
                dir.file(std::string("mpirun-init-") + (asked ? "asked" : "not") + ".out"));
    ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << daemon.Log();
    const std::string out = run.Output();
    ExpectAllOk(out, ranks);
    for (int r = 0; r < ranks; ++r) {
      EXPECT_NE(out.find("rank " + std::to_string(r) + ": starts=" + std::to_string(starts)), std::string::npos) << out;
    }
    const auto [served, fell] = Stats(out, "MPI_Alltoall_init");
    EXPECT_EQ(served, asked ? starts * ranks : 0) << out;
    EXPECT_EQ(fell, asked ? 0 : starts * ranks) << out;
    if (!asked) {
      EXPECT_NE(out.find("MPI_Alltoall_init: " + std::to_string(starts) +
                         " handed to the MPI library by the selection table: the selection table hands ialltoall "
                         "on 1 node x 3 ranks (tcp) to the MPI library (no row matches)"),
                std::string::npos)
          << out;
    }
  }
}

}  // namespace
}  // namespace ohio::testing
