// A real mpirun job (Open MPI or MPICH) of one of the check programs in tests/mpi, with
// libohio_mpi preloaded and each rank pointed at its node's daemon (on_node.sh), and the shim's
// OHIO_STATS lines read back from its output.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ohio::testing {

struct Mpi {
  const char* name;
  const char* mpirun;
};
extern const Mpi kOpenMpi;
extern const Mpi kMpich;

// How the ranks reach ohio: the LD_PRELOAD shim (client/libohio_mpi_<mpi>.so), Open MPI's
// collective component coll/ohio (client/openmpi_coll/mca_coll_ohio.so, found through
// mca_base_component_path; Open MPI only), or both at once.
enum class Binding { kShim, kComponent, kShimAndComponent };

// OHIO_SELECTION=always: ohio serves every call it can, whatever the selection table would hand
// to the MPI library. For the jobs that test how ohio serves calls rather than which calls it
// serves (tests/mpi/selection/selection_test.cc tests those).
extern const std::pair<std::string, std::string> kServeEveryCall;

// OHIO_IALLTOALL_MIN_BYTES=0: ohiod moves every MPI_Ialltoall and MPI_Ialltoallv ohio can serve,
// whatever the selection table's verdict (the tests about how those calls are served set it).
extern const std::pair<std::string, std::string> kNonblockingAll;

// Where a job's ranks are: `ppn` on each of `nodes` emulated nodes.
struct Topology {
  uint32_t nodes;
  int ppn;
};

// argv for mpirun running `ranks` ranks of tests/mpi/<program>_<mpi> (a data dependency of the
// test), `ppn` per node in the order of `sockets`, with `env` added and OHIO_STATS on. A program
// of a subpackage is named with it: "daemon/daemon_loss_check".
std::vector<std::string> MpiRun(const Mpi& mpi, int ranks, const std::vector<std::string>& sockets, int ppn,
                                const std::vector<std::pair<std::string, std::string>>& env,
                                const std::string& program, const std::vector<std::string>& program_args,
                                Binding binding = Binding::kShim);

// The same for a program outside tests/mpi, by its absolute path (e.g. /usr/bin/hpcc).
std::vector<std::string> MpiRunPath(const Mpi& mpi, int ranks, const std::vector<std::string>& sockets, int ppn,
                                    const std::vector<std::pair<std::string, std::string>>& env,
                                    const std::string& program_path, const std::vector<std::string>& program_args,
                                    Binding binding = Binding::kShim);

// Open MPI's component path with the directory coll/ohio was built in first (the one README.md
// names, //client/openmpi_coll:component), then Open MPI's own components.
std::string ComponentPath();

// "ohio: S <function> calls served by ohiod, F handed back ..." -> (S, F); (-1, -1) if absent.
std::pair<long, long> Stats(const std::string& out, const std::string& function = "MPI_Alltoall");

// Every rank printed "rank R: ALL OK" and none "WRONG" (gtest expectations).
void ExpectAllOk(const std::string& out, int ranks);

// tests/mpi/alltoall_check.c run: its MPI_Alltoall calls served but the one with a pair type on
// rank 0, handed back on every rank with the reason; its 22 MPI_Alltoallv calls served (gtest
// expectations). Returns the MPI_Alltoall calls served, over all ranks.
long ExpectAlltoallCheckServed(const std::string& out, int ranks);

// tests/mpi/fortran_check.F90 run with `iterations`: per rank and iteration two MPI_Alltoall
// (one in place), two MPI_Ialltoall, one each of Alltoallv, Alltoallw and Ialltoallv, and, built
// with -DWITH_ALLTOALL_INIT, two Starts of an MPI_Alltoall_init: all served (gtest expectations).
void ExpectFortranCheckServed(const std::string& out, int ranks, int iterations, bool alltoall_init);

// tests/mpi/alltoallw_check.c run with `iterations` and "mismatch": its typed calls (three per
// iteration) and the one after the mismatch served; the darray call handed back on every
// rank, with its reason; the mismatch MPI_ERR_COUNT on every rank (gtest expectations).
void ExpectAlltoallwCheckServed(const std::string& out, int ranks, int iterations);

}  // namespace ohio::testing
