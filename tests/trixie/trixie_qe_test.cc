// A real Fortran application of Debian 13: trixie's Quantum ESPRESSO pw.x (linked to its Open MPI
// 5.0) inside the root, a silicon SCF on 4 ranks (tests/mpi/qe/si.scf.in), on one node and on two,
// through Open MPI 5's coll/ohio. Its FFT transposes are MPI_ALLTOALL calls from Fortran. The
// total energy must come out as in the same run with ohio disabled, to the last printed digit,
// after as many SCF steps, and every call the run without ohio made must have been served.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <iostream>

#include "tests/harness/cluster.h"
#include "tests/mpi/pw_run.h"
#include "tests/trixie/root_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(300);
constexpr int kRanks = 4;

// Runs the root's pw.x in a directory of its own, with the input and pseudopotential beside it.
PwRun RunPw(const RootWork& work, const std::string& name, const std::vector<std::string>& sockets, int ppn,
            const std::vector<std::pair<std::string, std::string>>& env) {
  const std::string dir = work.dir().file(name);
  EXPECT_EQ(mkdir(dir.c_str(), 0755), 0);
  for (const char* file : {"si.scf.in", "Si.pz-vbc.UPF"}) {
    std::filesystem::copy_file(RunfilePath(std::string("tests/mpi/qe/") + file), dir + "/" + file);
  }
  // Every call pw.x makes goes to ohio, whatever the selection table would choose.
  std::vector<std::pair<std::string, std::string>> all = {kServeEveryCall};
  all.insert(all.end(), env.begin(), env.end());
  // pw.x reads its pseudopotential from where the ranks start.
  Process run(work.MpiRun(kTrixieOpenMpi, kRanks, sockets, ppn, all, "/usr/bin/pw.x", {"-in", "si.scf.in"},
                          Binding::kComponent, dir),
              dir + "/mpirun.out");
  EXPECT_EQ(run.Wait(kDeadline), 0) << name << "\n" << run.Output();
  return ParsePwRun(run.Output());
}

TEST(TrixieQuantumEspresso, EveryFftTransposeServedAndTheSameTotalEnergy) {
  if (!std::filesystem::exists("/var/cache/ohio-test/trixie-root/usr/bin/pw.x")) {
    GTEST_SKIP() << "quantum-espresso did not install in the Debian 13 root (make-root.sh said why)";
  }
  TempDir dir;
  RootWork work(dir);
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::string node0 = cluster.node(0).socket(), node1 = cluster.node(1).socket();

  // Without ohio: the component is loaded but hands every call to Open MPI's, and counts it.
  const PwRun without = RunPw(work, "without", {node0}, kRanks, {{"OHIO_DISABLE", "1"}});
  ASSERT_FALSE(without.energy.empty()) << without.out;
  EXPECT_GT(without.iterations, 1) << without.out;
  // The FFTs are distributed: the transposes are there to serve.
  EXPECT_GT(without.stats.at("MPI_Alltoall").second, 100) << without.out;
  std::cout << "without ohio: " << without.energy << " after " << without.iterations << " SCF steps, "
            << without.stats.at("MPI_Alltoall").second << " MPI_Alltoall calls" << std::endl;

  ExpectSameAsWithout(without, RunPw(work, "one-node", {node0}, kRanks, {}));
  ExpectSameAsWithout(without, RunPw(work, "two-nodes", {node0, node1}, kRanks / 2, {}));
  EXPECT_NE(cluster.node(1).Log().find("created for"), std::string::npos) << "node 1 served none\n" << cluster.Logs();
}

}  // namespace
}  // namespace ohio::testing
