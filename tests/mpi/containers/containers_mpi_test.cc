// An unmodified MPI program (tests/mpi/alltoall_check.c) under Open MPI's mpirun through the
// LD_PRELOAD shim, with its ranks in containers made with unshare (their own PID and mount
// namespaces, /proc mounted for them, the host's ohiod socket bind-mounted at
// /run/ohio/ohiod.sock) and ohiod on the host (tests/mpi/containers/in_container.sh): the whole job in one
// container (mpirun inside it, with a private /tmp and /dev/shm), and every rank in a container
// of its own (mpirun runs in_container.sh before the program). Every byte is checked by the
// program, the shim's statistics show the calls served by ohiod, and across containers the
// ranks say once that they copy through shared memory.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/harness/daemon_fixture.h"
#include "tests/harness/process.h"
#include "tests/harness/scoped_env.h"
#include "tests/mpi/mpi_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(180);
constexpr int kRanks = 4;
constexpr const char* kSocketInside = "/run/ohio/ohiod.sock";
constexpr const char* kSeparateNamespaces = "ohio: the ranks of this group on this node are not all in one PID namespace";
// Up to 64 KiB per rank pair, 3 iterations: calls read in place from 32 KiB.
const std::vector<std::string> kCheckArgs = {"65536", "3"};
const std::vector<std::pair<std::string, std::string>> kEnv = {kServeEveryCall, {"OHIO_SINGLE_COPY_BYTES", "32768"}};

void ExpectServed(const std::string& out) {
  ExpectAllOk(out, kRanks);
  const auto [served, fell] = Stats(out);
  EXPECT_GT(served, 100) << out;
  EXPECT_EQ(fell, kRanks) << "only the call with a pair type on rank 0 is handed back, once per rank\n" << out;
}

TEST(ContainersMpi, TheWholeJobInOneContainer) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  // mpirun, its daemons and the ranks in one PID namespace, with /tmp, /dev/shm and /run their
  // own: in_container.sh run before mpirun, finding the host's socket as rank 0's.
  ScopedEnv sockets("OHIO_TEST_SOCKETS", daemon.socket());
  ScopedEnv ppn("OHIO_TEST_PPN", std::to_string(kRanks));
  std::vector<std::string> argv = {RunfilePath("tests/mpi/containers/in_container.sh"), "--private-tmp"};
  const std::vector<std::string> mpirun = MpiRun(kOpenMpi, kRanks, {kSocketInside}, kRanks, kEnv, "alltoall_check", kCheckArgs);
  argv.insert(argv.end(), mpirun.begin(), mpirun.end());
  Process run(argv, dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << daemon.Log();
  ExpectServed(run.Output());
  EXPECT_EQ(run.Output().find(kSeparateNamespaces), std::string::npos) << run.Output();
}

TEST(ContainersMpi, EveryRankInAContainerOfItsOwn) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  std::vector<std::string> argv =
      MpiRun(kOpenMpi, kRanks, {daemon.socket()}, kRanks, kEnv, "alltoall_check", kCheckArgs);
  for (std::string& a : argv) {
    if (a == RunfilePath("tests/mpi/on_node.sh")) a = RunfilePath("tests/mpi/containers/in_container.sh");
    // Open MPI's own shared-memory transport between ranks in separate containers (each with
    // its own /dev/shm and PID namespace) crashed in its sends (SIGSEGV in
    // mca_btl_vader_sendi, with its single copy off and its segment in /tmp): its point-to-point
    // traffic goes over TCP here.
    if (a == "vader,self") a = "tcp,self";
  }
  Process run(argv, dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output() << daemon.Log();
  ExpectServed(run.Output());
  EXPECT_NE(run.Output().find(kSeparateNamespaces), std::string::npos) << run.Output();
}

}  // namespace
}  // namespace ohio::testing
