// A coll/ohio built for one Open MPI is refused by the other, cleanly: the job runs through Open
// MPI's own components, every byte right, nothing served and nothing crashed, and Open MPI says
// which library the component wanted. The 4.1 component in Debian 13's Open MPI 5.0, and the 5.0
// component in this machine's (Debian 12's) Open MPI 4.1: each is linked to its release's
// libopen-pal (.so.40, .so.80), and each declares its release's collective framework version.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "tests/harness/cluster.h"
#include "tests/trixie/root_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(240);
constexpr int kRanks = 2;
const std::vector<std::string> kArgs = {"4096", "1"};

void ExpectRefusedAndCorrect(const std::string& out, const std::string& missing_library) {
  ExpectAllOk(out, kRanks);
  EXPECT_EQ(out.find("ohio: served through"), std::string::npos) << out;
  EXPECT_EQ(Stats(out), std::make_pair(-1L, -1L)) << out;
  EXPECT_NE(out.find("unable to open mca_coll_ohio: " + missing_library), std::string::npos) << out;
}

TEST(TrixieRefusal, TheComponentFor41IsRefusedByOpenMpi50) {
  TempDir dir;
  RootWork work(dir);
  ASSERT_TRUE(work.Build("mpicc.openmpi", "alltoall_check.c", "alltoall_check_openmpi5"));
  // The component directory the job is given holds the 4.1 build instead.
  std::filesystem::copy_file(RunfilePath("client/openmpi_coll/mca_coll_ohio.so"),
                             work.ComponentDir() + "/mca_coll_ohio.so",
                             std::filesystem::copy_options::overwrite_existing);
  Cluster cluster(dir, 1);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  Process run(work.MpiRun(kTrixieOpenMpi, kRanks, {cluster.node(0).socket()}, kRanks, {kServeEveryCall},
                          dir.file("alltoall_check_openmpi5"), kArgs, Binding::kComponent),
              dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output();
  ExpectRefusedAndCorrect(run.Output(), "libopen-pal.so.40");
  EXPECT_EQ(QueryCounters(cluster.node(0).admin_socket()).collectives_served(), 0u);
}

TEST(TrixieRefusal, TheComponentFor50IsRefusedByOpenMpi41) {
  TempDir dir;
  RootWork work(dir);
  Cluster cluster(dir, 1);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  std::vector<std::string> argv = MpiRun(kOpenMpi, kRanks, {cluster.node(0).socket()}, kRanks, {kServeEveryCall},
                                         "alltoall_check", kArgs, Binding::kComponent);
  // The component path names the directory of the 5.0 build instead of the 4.1 one.
  const std::string path_setting = "OMPI_MCA_mca_base_component_path=";
  auto path = std::find_if(argv.begin(), argv.end(), [&](const std::string& a) { return a.rfind(path_setting, 0) == 0; });
  ASSERT_NE(path, argv.end());
  *path = path_setting + work.ComponentDir() + ":/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3";
  Process run(argv, dir.file("mpirun.out"));
  ASSERT_EQ(run.Wait(kDeadline), 0) << run.Output();
  ExpectRefusedAndCorrect(run.Output(), "libopen-pal.so.80");
  EXPECT_EQ(QueryCounters(cluster.node(0).admin_socket()).collectives_served(), 0u);
}

}  // namespace
}  // namespace ohio::testing
