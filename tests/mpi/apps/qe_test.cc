// A real Fortran application, unmodified: Quantum ESPRESSO's pw.x (Debian's, linked to Open MPI)
// under real mpirun, a silicon SCF on 4 ranks (tests/mpi/qe/si.scf.in), on one node and on two
// emulated nodes, through the preloaded shim and through Open MPI's collective component. Its FFT transposes are MPI_ALLTOALL calls from Fortran. The total energy must
// come out as in the same run with ohio disabled, to the last printed digit, and every call the
// run without ohio made must have been served (as many, none handed back).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "tests/harness/cluster.h"
#include "tests/harness/process.h"
#include "tests/mpi/mpi_job.h"
#include "tests/mpi/pw_run.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(180);
constexpr int kRanks = 4;
const char* const kPw = "/usr/bin/pw.x";

// Runs pw.x in a directory of its own, with the input and pseudopotential beside it.
PwRun RunPw(const TempDir& dir, const std::string& name, const std::vector<std::string>& sockets, int ppn,
            const std::vector<std::pair<std::string, std::string>>& env, Binding binding = Binding::kShim) {
  const std::string work = dir.file(name);
  EXPECT_EQ(mkdir(work.c_str(), 0755), 0);
  for (const char* file : {"si.scf.in", "Si.pz-vbc.UPF"}) {
    std::ifstream in(RunfilePath(std::string("tests/mpi/qe/") + file));
    std::ofstream(work + "/" + file) << in.rdbuf();
  }
  // mpirun starts the ranks where it was started; pw.x reads its pseudopotential from there.
  char* here = getcwd(nullptr, 0);
  EXPECT_EQ(chdir(work.c_str()), 0);
  // Every call pw.x makes goes to ohio, whatever the selection table would choose.
  std::vector<std::pair<std::string, std::string>> all = {kServeEveryCall};
  all.insert(all.end(), env.begin(), env.end());
  Process run(MpiRunPath(kOpenMpi, kRanks, sockets, ppn, all, kPw, {"-in", "si.scf.in"}, binding), work + "/mpirun.out");
  EXPECT_EQ(chdir(here), 0);
  free(here);
  EXPECT_EQ(run.Wait(kDeadline), 0) << name << "\n" << run.Output();
  return ParsePwRun(run.Output());
}

TEST(QuantumEspresso, EveryFftTransposeServedAndTheSameTotalEnergy) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::string node0 = cluster.node(0).socket(), node1 = cluster.node(1).socket();

  // Without ohio: the shim is there but every call goes to Open MPI, and is counted.
  const PwRun without = RunPw(dir, "without", {node0}, kRanks, {{"OHIO_DISABLE", "1"}});
  ASSERT_FALSE(without.energy.empty()) << without.out;
  EXPECT_GT(without.iterations, 1) << without.out;
  // The FFTs are distributed: the transposes are there to serve.
  EXPECT_GT(without.stats.at("MPI_Alltoall").second, 100) << without.out;

  const PwRun one_node = RunPw(dir, "one-node", {node0}, kRanks, {});
  ExpectSameAsWithout(without, one_node);

  const PwRun two_nodes = RunPw(dir, "two-nodes", {node0, node1}, kRanks / 2, {});
  ExpectSameAsWithout(without, two_nodes);

  // Through the component, nothing preloaded.
  const PwRun one_node_component = RunPw(dir, "one-node-component", {node0}, kRanks, {}, Binding::kComponent);
  ExpectSameAsWithout(without, one_node_component);
  const PwRun two_nodes_component =
      RunPw(dir, "two-nodes-component", {node0, node1}, kRanks / 2, {}, Binding::kComponent);
  ExpectSameAsWithout(without, two_nodes_component);
  EXPECT_NE(cluster.node(1).Log().find("created for"), std::string::npos) << "node 1 served none\n" << cluster.Logs();
}

}  // namespace
}  // namespace ohio::testing
