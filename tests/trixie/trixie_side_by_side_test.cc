// One ohiod, this machine's, serving a Debian 12 job (this machine's Open MPI 4.1 and its
// mpirun, through the component built for 4.1) and a Debian 13 job (the root's Open MPI 5.0 and
// its mpirun, through the component built for 5.0) at the same time: both jobs' every byte right
// and every call counted served, the daemon holding both jobs' groups at once.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/harness/cluster.h"
#include "tests/harness/wait_until.h"
#include "tests/trixie/root_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(300);
constexpr int kRanks = 3;

TEST(TrixieSideBySide, OneDaemonServesADebian12AndADebian13JobAtOnce) {
  TempDir dir;
  RootWork work(dir);
  ASSERT_TRUE(work.Build("mpicc.openmpi", "alltoall_check.c", "alltoall_check_openmpi5"));
  Cluster cluster(dir, 1);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::vector<std::string> sockets = {cluster.node(0).socket()};
  // Enough calls that each job's group lives while the other's starts: alltoall_check makes 100
  // or so per iteration.
  const std::vector<std::string> args = {"65536", "30"};
  Process bookworm(MpiRun(kOpenMpi, kRanks, sockets, kRanks, {kServeEveryCall}, "alltoall_check", args,
                          Binding::kComponent),
                   dir.file("debian12.out"));
  Process trixie(work.MpiRun(kTrixieOpenMpi, kRanks, sockets, kRanks, {kServeEveryCall},
                             dir.file("alltoall_check_openmpi5"), args, Binding::kComponent),
                 dir.file("debian13.out"));
  // Both jobs' groups open in the daemon at the same moment, seen from its admin socket.
  uint32_t most_groups = 0;
  const bool together = WaitUntil(
      [&] {
        const StatusQuery status = QueryStatus(cluster.node(0).admin_socket());
        if (status.ok) most_groups = std::max(most_groups, status.reply.groups());
        return most_groups >= 2 || !bookworm.Running() || !trixie.Running();
      },
      kDeadline);
  EXPECT_TRUE(together);
  EXPECT_GE(most_groups, 2u) << "the jobs never overlapped\n" << bookworm.Output() << trixie.Output();
  ASSERT_EQ(bookworm.Wait(kDeadline), 0) << bookworm.Output() << cluster.Logs();
  ASSERT_EQ(trixie.Wait(kDeadline), 0) << trixie.Output() << cluster.Logs();
  long served_by_ranks = 0;
  for (const Process* job : {&bookworm, &trixie}) {
    const std::string out = job->Output();
    ExpectAllOk(out, kRanks);
    EXPECT_NE(out.find("ohio: served through Open MPI's collective component coll/ohio"), std::string::npos) << out;
    const auto [served, fell] = Stats(out);
    EXPECT_GT(served, 30L * 50) << out;
    EXPECT_EQ(fell, kRanks) << out;  // the pair-type call, on every rank
    served_by_ranks += served / kRanks;
  }
  EXPECT_GE(QueryCounters(cluster.node(0).admin_socket()).collectives_served(), static_cast<uint64_t>(served_by_ranks));
}

}  // namespace
}  // namespace ohio::testing
