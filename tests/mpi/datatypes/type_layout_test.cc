// Runs tests/mpi/datatypes/type_layout_check (client/mpi/mpi_type_layout against MPI_Pack and MPI_Unpack) as
// one rank under each MPI's own mpirun: every served combiner packs and unpacks as the library
// does, and the types the shim must not serve have no layout.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/harness/process.h"

namespace ohio::testing {
namespace {

class TypeLayout : public ::testing::TestWithParam<const char*> {};

TEST_P(TypeLayout, MatchesTheMpiLibrarysPackAndUnpack) {
  const std::string mpi = GetParam();
  TempDir dir;
  std::vector<std::string> argv;
  if (mpi == "openmpi") {
    argv = {"/usr/bin/mpirun.openmpi", "--allow-run-as-root", "-np", "1"};
  } else {
    argv = {"/usr/bin/mpirun.mpich", "-launcher", "fork", "-np", "1"};
  }
  argv.push_back(RunfilePath("tests/mpi/datatypes/type_layout_check_" + mpi));
  Process run(argv, dir.file("out"));
  ASSERT_EQ(run.Wait(std::chrono::seconds(120)), 0) << run.Output();
  const std::string out = run.Output();
  EXPECT_EQ(out.find("FAIL"), std::string::npos) << out;
  // 16 served types, 3 refused.
  EXPECT_NE(out.find("all 19 types ok"), std::string::npos) << out;
}

INSTANTIATE_TEST_SUITE_P(Mpis, TypeLayout, ::testing::Values("openmpi", "mpich"));

}  // namespace
}  // namespace ohio::testing
