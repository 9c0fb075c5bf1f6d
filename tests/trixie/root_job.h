// MPI jobs of Debian 13 (trixie): its Open MPI 5.0 and MPICH 4.2, inside the root that
// tests/trixie/make-root.sh builds, run through tests/trixie/in_root.sh against the ohiods this
// machine runs (tests/harness/cluster.h), whose sockets live in the test's directory, bound at the
// same path inside. The check programs of tests/mpi are compiled inside the root by trixie's own
// compiler wrappers, against its MPIs' headers, as a Debian 13 user would build them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tests/harness/process.h"
#include "tests/mpi/mpi_job.h"

namespace ohio::testing {

// Debian 13's MPIs, by their launchers inside the root.
extern const Mpi kTrixieOpenMpi;
extern const Mpi kTrixieMpich;

// A test's directory shared with the root: the ohio files the test's data brought (the check
// programs' sources under tests/mpi/, the components and shims, on_node.sh), copied in, and the
// programs built from them inside the root.
class RootWork {
 public:
  explicit RootWork(const TempDir& dir);

  // argv running `command` inside the root with the test's directory (and any of `binds`) bound,
  // in the working directory `cwd` (inside).
  std::vector<std::string> InRoot(const std::vector<std::string>& command,
                                  const std::vector<std::string>& binds = {}, const std::string& cwd = "/") const;

  // Compiles tests/mpi/<source> with `compiler` (e.g. mpicc.openmpi, mpifort.mpich) inside the
  // root into <dir>/<output>, with `flags`; true if it built (the compiler's output in the log
  // named for the output otherwise, and a gtest failure).
  bool Build(const std::string& compiler, const std::string& source, const std::string& output,
             const std::vector<std::string>& flags = {}) const;

  // mpirun of Debian 13's `mpi` running `ranks` ranks of `program` (a path inside the root),
  // `ppn` per node in the order of `sockets`, with `env` and OHIO_STATS on, reaching ohio through
  // Open MPI 5's coll/ohio (Binding::kComponent) or the LD_PRELOAD shim (Binding::kShim), the
  // ranks started in `cwd`.
  std::vector<std::string> MpiRun(const Mpi& mpi, int ranks, const std::vector<std::string>& sockets, int ppn,
                                  const std::vector<std::pair<std::string, std::string>>& env,
                                  const std::string& program, const std::vector<std::string>& args,
                                  Binding binding, const std::string& cwd = "/") const;

  // Where the component built for Open MPI 5 sits, alone: an Open MPI component path.
  std::string ComponentDir() const { return dir_.file("openmpi5"); }
  const TempDir& dir() const { return dir_; }

 private:
  const TempDir& dir_;
};

}  // namespace ohio::testing
