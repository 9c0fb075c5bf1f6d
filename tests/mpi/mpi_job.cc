#include "tests/mpi/mpi_job.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "tests/harness/process.h"

namespace ohio::testing {

const Mpi kOpenMpi = {"openmpi", "/usr/bin/mpirun.openmpi"};
const Mpi kMpich = {"mpich", "/usr/bin/mpirun.mpich"};
const std::pair<std::string, std::string> kServeEveryCall = {"OHIO_SELECTION", "always"};
const std::pair<std::string, std::string> kNonblockingAll = {"OHIO_IALLTOALL_MIN_BYTES", "0"};

std::vector<std::string> MpiRun(const Mpi& mpi, int ranks, const std::vector<std::string>& sockets, int ppn,
                                const std::vector<std::pair<std::string, std::string>>& env,
                                const std::string& program, const std::vector<std::string>& program_args,
                                Binding binding) {
  return MpiRunPath(mpi, ranks, sockets, ppn, env, RunfilePath("tests/mpi/" + program + "_" + mpi.name), program_args,
                    binding);
}

std::string ComponentPath() {
  // The directory Bazel built it in (the runfile is a link to it), which README.md tells a user
  // to name: whatever else lies there, Open MPI sees too.
  const std::filesystem::path component =
      std::filesystem::canonical(RunfilePath("client/openmpi_coll/component/mca_coll_ohio.so"));
  return component.parent_path().string() + ":/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3";
}

std::vector<std::string> MpiRunPath(const Mpi& mpi, int ranks, const std::vector<std::string>& sockets, int ppn,
                                    const std::vector<std::pair<std::string, std::string>>& env,
                                    const std::string& program_path, const std::vector<std::string>& program_args,
                                    Binding binding) {
  std::string joined;
  for (const auto& s : sockets) joined += (joined.empty() ? "" : ":") + s;
  std::vector<std::pair<std::string, std::string>> all = {
      {"OHIO_TEST_SOCKETS", joined}, {"OHIO_TEST_PPN", std::to_string(ppn)}, {"OHIO_STATS", "1"}};
  if (binding != Binding::kComponent) {
    all.emplace_back("LD_PRELOAD", RunfilePath(std::string("client/libohio_mpi_") + mpi.name + ".so"));
  }
  if (binding != Binding::kShim) all.emplace_back("OMPI_MCA_mca_base_component_path", ComponentPath());
  all.insert(all.end(), env.begin(), env.end());
  std::vector<std::string> argv = {mpi.mpirun};
  if (std::string(mpi.name) == "openmpi") {
    argv.insert(argv.end(), {"--allow-run-as-root", "--oversubscribe", "-np", std::to_string(ranks), "--mca", "pml",
                             "ob1", "--mca", "btl", "vader,self"});
    for (const auto& [k, v] : all) argv.insert(argv.end(), {"-x", k + "=" + v});
  } else {
    argv.insert(argv.end(), {"-launcher", "fork", "-np", std::to_string(ranks)});
    for (const auto& [k, v] : all) argv.insert(argv.end(), {"-genv", k, v});
  }
  argv.push_back(RunfilePath("tests/mpi/on_node.sh"));
  argv.push_back(program_path);
  argv.insert(argv.end(), program_args.begin(), program_args.end());
  return argv;
}

std::pair<long, long> Stats(const std::string& out, const std::string& function) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("ohio: (\\d+) " + function + " calls served by ohiod, (\\d+) handed back"))) {
    return {-1, -1};
  }
  return {std::stol(m[1]), std::stol(m[2])};
}

void ExpectAllOk(const std::string& out, int ranks) {
  for (int r = 0; r < ranks; ++r) EXPECT_NE(out.find("rank " + std::to_string(r) + ": ALL OK"), std::string::npos) << out;
  EXPECT_EQ(out.find("WRONG"), std::string::npos) << out;
}

long ExpectAlltoallCheckServed(const std::string& out, int ranks) {
  const auto [served, fell] = Stats(out);
  EXPECT_GT(served, 50) << out;
  EXPECT_EQ(fell, ranks) << out;
  EXPECT_NE(out.find("MPI_Alltoall: 1 handed back: a predefined datatype with holes (a pair type)"),
            std::string::npos)
      << out;
  EXPECT_EQ(Stats(out, "MPI_Alltoallv"), std::make_pair(22L * ranks, 0L)) << out;
  return served;
}

void ExpectFortranCheckServed(const std::string& out, int ranks, int iterations, bool alltoall_init) {
  const long calls = static_cast<long>(iterations) * ranks;
  EXPECT_EQ(Stats(out, "MPI_Alltoall"), std::make_pair(2 * calls, 0L)) << out;
  EXPECT_EQ(Stats(out, "MPI_Alltoallv"), std::make_pair(calls, 0L)) << out;
  EXPECT_EQ(Stats(out, "MPI_Alltoallw"), std::make_pair(calls, 0L)) << out;
  EXPECT_EQ(Stats(out, "MPI_Ialltoall"), std::make_pair(2 * calls, 0L)) << out;
  EXPECT_EQ(Stats(out, "MPI_Ialltoallv"), std::make_pair(calls, 0L)) << out;
  EXPECT_EQ(Stats(out, "MPI_Alltoall_init"), std::make_pair(alltoall_init ? 2 * calls : 0L, 0L)) << out;
}

void ExpectAlltoallwCheckServed(const std::string& out, int ranks, int iterations) {
  EXPECT_EQ(Stats(out, "MPI_Alltoallw"), std::make_pair((3L * iterations + 1) * ranks, static_cast<long>(ranks)))
      << out;
  EXPECT_NE(out.find("MPI_Alltoallw: 1 handed back: a datatype built in a way ohio does not serve (darray, "
                     "Fortran or deprecated)"),
            std::string::npos)
      << out;
  for (int r = 0; r < ranks; ++r) {
    EXPECT_NE(out.find("rank " + std::to_string(r) + ": mismatch: error class MPI_ERR_COUNT"), std::string::npos)
        << out;
  }
}

}  // namespace ohio::testing
