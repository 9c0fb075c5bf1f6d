// A real application, unmodified: Debian's HPC Challenge (/usr/bin/hpcc, linked to Open MPI)
// under real mpirun with libohio_mpi preloaded, and through Open MPI's collective component, on
// one node and on two emulated nodes. Its own
// checks (HPL, PTRANS, MPIFFT, RandomAccess: PASSED lines, residuals, errors) must come out as
// in the same run with ohio disabled, and every MPI_Alltoall, MPI_Alltoallv and MPI_Alltoallw it
// made must have been served (as many as the run without ohio made, none handed back).
// tests/mpi/hpccinf.txt keeps it to seconds: HPL N=200 on a 2x2 grid (PTRANS 100, MPIFFT 4096).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "tests/harness/cluster.h"
#include "tests/harness/process.h"
#include "tests/mpi/mpi_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(120);
constexpr int kRanks = 4;  // the 2x2 grid of hpccinf.txt
const char* const kHpcc = "/usr/bin/hpcc";
const char* const kServedFunctions[] = {"MPI_Alltoall", "MPI_Alltoallv", "MPI_Alltoallw"};

// What hpcc says of its own correctness, from hpccoutf.txt: the summary's residuals, norms and
// error counts, and how many checks passed and failed.
std::map<std::string, std::string> Checks(const std::string& hpccoutf) {
  std::map<std::string, std::string> checks;
  std::istringstream in(hpccoutf);
  std::string line;
  const std::regex check_key("^(Success|HPL_[RAXB]norm\\w+|PTRANS_residual|MPIFFT_maxErr|MPIFFT_Procs|"
                             "MPIRandomAccess(_LCG)?_Errors)=(.*)$");
  long passed = 0, failed = 0;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, check_key)) checks[m[1]] = m[3];
    // PTRANS follows each timed run's WALL row with a CPU row only when the CPU clock ticked
    // during the run: how many there are is timing, not correctness.
    if (line.rfind("CPU ", 0) == 0) continue;
    if (line.find("PASSED") != std::string::npos || line.find("(passed)") != std::string::npos) ++passed;
    if (line.find("FAILED") != std::string::npos || line.find("(failed)") != std::string::npos) ++failed;
  }
  checks["lines that passed"] = std::to_string(passed);
  checks["lines that failed"] = std::to_string(failed);
  return checks;
}

struct HpccRun {
  std::string out;                                    // mpirun's
  std::map<std::string, std::string> checks;          // from hpccoutf.txt
  std::map<std::string, std::pair<long, long>> stats;  // OHIO_STATS per function
};

// Runs hpcc in a directory of its own (it reads hpccinf.txt and writes hpccoutf.txt there).
HpccRun RunHpcc(const TempDir& dir, const std::string& name, const std::vector<std::string>& sockets, int ppn,
                const std::vector<std::pair<std::string, std::string>>& env, Binding binding = Binding::kShim) {
  const std::string work = dir.file(name);
  EXPECT_EQ(mkdir(work.c_str(), 0755), 0);
  {
    std::ifstream in(RunfilePath("tests/mpi/hpccinf.txt"));
    std::ofstream(work + "/hpccinf.txt") << in.rdbuf();
  }
  // mpirun starts the ranks where it was started.
  char* here = getcwd(nullptr, 0);
  EXPECT_EQ(chdir(work.c_str()), 0);
  // Every call hpcc makes goes to ohio, whatever the selection table would choose.
  std::vector<std::pair<std::string, std::string>> all = {kServeEveryCall};
  all.insert(all.end(), env.begin(), env.end());
  Process run(MpiRunPath(kOpenMpi, kRanks, sockets, ppn, all, kHpcc, {}, binding), work + "/mpirun.out");
  EXPECT_EQ(chdir(here), 0);
  free(here);
  HpccRun r;
  EXPECT_EQ(run.Wait(kDeadline), 0) << name << "\n" << run.Output();
  r.out = run.Output();
  std::ostringstream hpccoutf;
  hpccoutf << std::ifstream(work + "/hpccoutf.txt").rdbuf();
  r.checks = Checks(hpccoutf.str());
  for (const char* f : kServedFunctions) r.stats[f] = Stats(r.out, f);
  return r;
}

// hpcc's checks passed and came out as without ohio; every call the run without ohio made
// was served.
void ExpectSameAsWithout(const HpccRun& without, const HpccRun& with) {
  EXPECT_EQ(with.checks, without.checks) << with.out;
  for (const char* f : kServedFunctions) {
    EXPECT_EQ(with.stats.at(f).first, without.stats.at(f).second) << f << "\n" << with.out;
    EXPECT_EQ(with.stats.at(f).second, 0) << f << "\n" << with.out;
  }
  EXPECT_GT(with.stats.at("MPI_Alltoall").first, 0) << with.out;
}

TEST(Hpcc, MpifftAndPtransThroughOhioMatchTheRunWithout) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::string node0 = cluster.node(0).socket(), node1 = cluster.node(1).socket();

  // Without ohio: the shim is there but every call goes to Open MPI, and is counted.
  const HpccRun without = RunHpcc(dir, "without", {node0}, kRanks, {{"OHIO_DISABLE", "1"}});
  ASSERT_EQ(without.checks.at("Success"), "1") << without.out;
  EXPECT_EQ(without.checks.at("lines that failed"), "0") << without.out;
  EXPECT_NE(without.checks.at("lines that passed"), "0") << without.out;
  EXPECT_EQ(without.checks.at("PTRANS_residual"), "0") << without.out;
  EXPECT_EQ(without.checks.at("MPIFFT_Procs"), std::to_string(kRanks)) << without.out;
  EXPECT_GT(without.stats.at("MPI_Alltoall").second, 0) << without.out;

  const HpccRun one_node = RunHpcc(dir, "one-node", {node0}, kRanks, {});
  ExpectSameAsWithout(without, one_node);

  const HpccRun two_nodes = RunHpcc(dir, "two-nodes", {node0, node1}, kRanks / 2, {});
  ExpectSameAsWithout(without, two_nodes);

  // Through Open MPI's collective component, nothing preloaded.
  ExpectSameAsWithout(without, RunHpcc(dir, "one-node-component", {node0}, kRanks, {}, Binding::kComponent));
  ExpectSameAsWithout(without,
                      RunHpcc(dir, "two-nodes-component", {node0, node1}, kRanks / 2, {}, Binding::kComponent));
  EXPECT_NE(cluster.node(1).Log().find("created for"), std::string::npos) << "node 1 served none\n" << cluster.Logs();
}

}  // namespace
}  // namespace ohio::testing
