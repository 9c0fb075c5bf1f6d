#include "tests/trixie/root_job.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace ohio::testing {

const Mpi kTrixieOpenMpi = {"openmpi", "mpirun.openmpi"};
const Mpi kTrixieMpich = {"mpich", "mpirun.mpich"};

namespace {

namespace fs = std::filesystem;

constexpr auto kBuildDeadline = std::chrono::seconds(240);

// Open MPI 5's own components, after the directory of the one under test.
constexpr char kOpenMpi5Components[] = "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi40";

void CopyIn(const std::string& from_runfile, const std::string& to) {
  fs::create_directories(fs::path(to).parent_path());
  // The runfiles are symlinks into Bazel's output tree, which is not bound into the root.
  fs::copy_file(RunfilePath(from_runfile), to, fs::copy_options::overwrite_existing);
}

}  // namespace

RootWork::RootWork(const TempDir& dir) : dir_(dir) {
  for (const auto& entry : fs::directory_iterator(RunfilePath("tests/mpi"))) {
    const std::string ext = entry.path().extension();
    if (ext == ".c" || ext == ".h" || ext == ".F90" || ext == ".inc" || ext == ".py" || ext == ".sh") {
      CopyIn("tests/mpi/" + entry.path().filename().string(), dir_.file("tests/mpi/" + entry.path().filename().string()));
    }
  }
  CopyIn("client/openmpi_coll/openmpi5/mca_coll_ohio.so", ComponentDir() + "/mca_coll_ohio.so");
  for (const char* shim : {"libohio_mpi_mpich.so", "libohio_mpi_openmpi.so"}) {
    CopyIn(std::string("client/") + shim, dir_.file(shim));
  }
}

std::vector<std::string> RootWork::InRoot(const std::vector<std::string>& command,
                                          const std::vector<std::string>& binds, const std::string& cwd) const {
  std::vector<std::string> argv = {"/bin/bash", RunfilePath("tests/trixie/in_root.sh"), "--bind", dir_.path()};
  for (const auto& b : binds) argv.insert(argv.end(), {"--bind", b});
  argv.insert(argv.end(), {"--cd", cwd, "--"});
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

bool RootWork::Build(const std::string& compiler, const std::string& source, const std::string& output,
                     const std::vector<std::string>& flags) const {
  std::vector<std::string> command = {compiler, "-O1", "-I" + dir_.path()};
  // Where gfortran writes module files: not the root's working directory.
  if (compiler.rfind("mpifort", 0) == 0) command.insert(command.end(), {"-J", dir_.path()});
  command.insert(command.end(), flags.begin(), flags.end());
  command.insert(command.end(), {"-o", dir_.file(output), dir_.file("tests/mpi/" + source)});
  Process build(InRoot(command), dir_.file("build-" + output + ".log"));
  const int rc = build.Wait(kBuildDeadline);
  EXPECT_EQ(rc, 0) << compiler << " " << source << ":\n" << build.Output();
  return rc == 0;
}

std::vector<std::string> RootWork::MpiRun(const Mpi& mpi, int ranks, const std::vector<std::string>& sockets,
                                          int ppn, const std::vector<std::pair<std::string, std::string>>& env,
                                          const std::string& program, const std::vector<std::string>& args,
                                          Binding binding, const std::string& cwd) const {
  std::string joined;
  for (const auto& s : sockets) joined += (joined.empty() ? "" : ":") + s;
  std::vector<std::pair<std::string, std::string>> all = {
      {"OHIO_TEST_SOCKETS", joined}, {"OHIO_TEST_PPN", std::to_string(ppn)}, {"OHIO_STATS", "1"}};
  if (binding != Binding::kComponent) {
    all.emplace_back("LD_PRELOAD", dir_.file(std::string("libohio_mpi_") + mpi.name + ".so"));
  }
  all.insert(all.end(), env.begin(), env.end());
  std::vector<std::string> argv = {mpi.mpirun};
  if (std::string(mpi.name) == "openmpi") {
    argv.insert(argv.end(), {"--allow-run-as-root", "--oversubscribe", "-np", std::to_string(ranks), "--mca", "pml",
                             "ob1", "--mca", "btl", "self,sm"});
    // Open MPI 5 (PRRTE) takes MCA parameters on its command line, not as -x OMPI_MCA_... .
    if (binding != Binding::kShim) {
      argv.insert(argv.end(), {"--mca", "mca_base_component_path", ComponentDir() + ":" + kOpenMpi5Components});
    }
    for (const auto& [k, v] : all) argv.insert(argv.end(), {"-x", k + "=" + v});
  } else {
    argv.insert(argv.end(), {"-launcher", "fork", "-np", std::to_string(ranks)});
    for (const auto& [k, v] : all) argv.insert(argv.end(), {"-genv", k, v});
  }
  argv.push_back(dir_.file("tests/mpi/on_node.sh"));
  argv.push_back(program);
  argv.insert(argv.end(), args.begin(), args.end());
  return InRoot(argv, {}, cwd);
}

}  // namespace ohio::testing
