// A call ohio hands to the MPI library must cost a program nothing it can see: no lock, no
// system call, no message to ohiod (client/mpi/hand_back_at_once.h). Real mpirun jobs of
// tests/mpi/selection/hand_back_check.c, 2 ranks on one node, each rank's calling thread traced by strace
// (every system call with its stack) and tests/mpi/selection/lock_counter.c preloaded: inside the window of calls
// the table hands back (64 B per rank pair on one node), and of calls on a communicator without
// a group (no ohiod listening, through the shim; the component then gives no module at all), no
// system call has ohio's code on its stack, and ohio's code takes no lock. The hand-backs are
// still counted exactly: OHIO_STATS and ohiod's counters.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/process.h"
#include "tests/harness/wait_until.h"
#include "tests/mpi/mpi_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(240);
constexpr int kRanks = 2;
// In the window: more than 4,096, so that the counts are added to ohiod's (the group's segment,
// or the connection's hand-back page while no group is joined) inside it too.
constexpr int kCalls = 4500;
constexpr int kSettle = 5;    // before it (hand_back_check.c)

// What the traces of one job's ranks show inside the window.
struct Window {
  int ranks_seen = 0;                // ranks whose trace holds both markers
  long system_calls = 0;             // by their calling threads inside the window, whoever made them
  std::vector<std::string> by_ohio;  // those with ohio's code on the stack, as traced
};

bool OhioFrame(const std::string& frame) {
  return frame.find("libohio") != std::string::npos || frame.find("mca_coll_ohio") != std::string::npos;
}

// Adds one rank's trace (strace -k: each system call's line, then its stack, a frame a line).
void ReadTrace(const std::string& path, Window* w) {
  std::ifstream in(path);
  std::string line, call;
  bool inside = false, begun = false, ohio = false;
  auto finish_call = [&] {
    if (inside && !call.empty()) {
      ++w->system_calls;
      if (ohio) w->by_ohio.push_back(call);
    }
    call.clear();
    ohio = false;
  };
  while (std::getline(in, line)) {
    if (line.rfind(" > ", 0) == 0) {
      if (OhioFrame(line)) ohio = true;
      if (!call.empty()) call += "\n" + line;
      continue;
    }
    finish_call();
    if (line.find("/ohio-hand-back-window/begin") != std::string::npos) {
      inside = begun = true;
    } else if (line.find("/ohio-hand-back-window/end") != std::string::npos) {
      if (begun && inside) ++w->ranks_seen;
      inside = false;
    } else {
      call = line;
    }
  }
  finish_call();
}

bool Traced(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("TracerPid:", 0) == 0) return std::stoi(line.substr(10)) != 0;
  }
  return false;
}

// `kRanks` ranks of hand_back_check with the lock counter preloaded (before the shim, which the
// binding may preload). Once each rank has settled its communicator, strace attaches to its
// calling thread (only then: tracing MPI_Init's thousands of calls with their stacks would take
// minutes) and the rank runs its window. The job's output, and the window as traced.
std::pair<std::string, Window> RunTraced(const TempDir& dir, const Mpi& mpi, const std::vector<std::string>& sockets,
                                         Binding binding, const std::string& call, const std::string& name) {
  std::string preload = RunfilePath("tests/mpi/selection/lock_counter.so");
  if (binding != Binding::kComponent) {
    preload += ":" + RunfilePath(std::string("client/libohio_mpi_") + mpi.name + ".so");
  }
  const std::string handshake = dir.file(name + ".handshake");
  std::filesystem::create_directory(handshake);
  Process run(MpiRun(mpi, kRanks, sockets, kRanks, {{"LD_PRELOAD", preload}}, "selection/hand_back_check",
                     {call, "64", std::to_string(kCalls), handshake}, binding),
              dir.file(name + ".out"));
  std::vector<std::unique_ptr<Process>> tracers;
  for (int r = 0; r < kRanks; ++r) {
    const std::string ready = handshake + "/ready." + std::to_string(r);
    if (!WaitUntil([&] { return std::filesystem::exists(ready); }, std::chrono::seconds(120))) {
      ADD_FAILURE() << "rank " << r << " did not reach its window\n" << run.Output();
      break;
    }
    pid_t pid = 0;
    std::ifstream(ready) >> pid;
    const std::string trace = dir.file(name + ".trace." + std::to_string(r));
    tracers.push_back(std::make_unique<Process>(
        std::vector<std::string>{"/usr/bin/strace", "-k", "-qq", "-o", trace, "-p", std::to_string(pid)},
        trace + ".out"));
    EXPECT_TRUE(WaitUntil([&] { return Traced(pid); }, std::chrono::seconds(30))) << "strace -p " << pid;
    std::ofstream(handshake + "/go." + std::to_string(r)) << "go\n";
  }
  EXPECT_EQ(run.Wait(kDeadline), 0) << run.Output();
  Window w;
  for (int r = 0; r < static_cast<int>(tracers.size()); ++r) {
    EXPECT_EQ(tracers[static_cast<size_t>(r)]->Wait(std::chrono::seconds(30)), 0);
    ReadTrace(dir.file(name + ".trace." + std::to_string(r)), &w);
  }
  return {run.Output(), w};
}

void ExpectNothingTakenByOhio(const std::string& out, const Window& w) {
  ExpectAllOk(out, kRanks);
  EXPECT_EQ(w.ranks_seen, kRanks) << "each rank's trace holds the window\n" << out;
  for (const std::string& call : w.by_ohio) ADD_FAILURE() << "a system call from ohio's code in the window:\n" << call;
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_NE(out.find("rank " + std::to_string(r) + ": locks taken by ohio in the window: 0\n"), std::string::npos)
        << out;
  }
  std::printf("%ld system calls in the window of %d calls x %d ranks, none from ohio's code\n", w.system_calls, kCalls,
              kRanks);
}

long HandedBack(const admin::CountersReply& c, const std::string& function, const std::string& reason) {
  for (const auto& h : c.handed_back()) {
    if (h.function() == function && h.reason() == reason) return static_cast<long>(h.count());
  }
  return 0;
}

void ExpectTableHandBack(const Mpi& mpi, Binding binding) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const auto [out, window] = RunTraced(dir, mpi, {daemon.socket()}, binding, "alltoall", "table");
  ExpectNothingTakenByOhio(out, window);
  constexpr long kAll = kRanks * (kCalls + kSettle);
  EXPECT_EQ(Stats(out), std::make_pair(0L, kAll)) << out;
  EXPECT_NE(out.find("ohio:   of those, " + std::to_string(kAll) +
                     " MPI_Alltoall calls handed to the MPI library by the selection table"),
            std::string::npos)
      << out;
  // Counted once per call by the node (its first rank), the calls of the window included.
  const admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(c.collectives_served(), 0u);
  EXPECT_EQ(HandedBack(c, "alltoall", "selection_table"), kCalls + kSettle) << c.DebugString();
}

TEST(HandBackCost, TableHandBackThroughTheShimUnderOpenMpi) { ExpectTableHandBack(kOpenMpi, Binding::kShim); }

TEST(HandBackCost, TableHandBackThroughTheShimUnderMpich) { ExpectTableHandBack(kMpich, Binding::kShim); }

TEST(HandBackCost, TableHandBackThroughTheComponent) { ExpectTableHandBack(kOpenMpi, Binding::kComponent); }

// No ohiod listens: through the shim every communicator's calls are handed back, and each call
// after the first costs no lock and no system call either (the first, which finds no daemon,
// tries to connect). The component learns from Open MPI's modex that no node of the job has an
// ohiod and gives no communicator a module: the calls are the library's alone.
void ExpectNoDaemon(Binding binding, const std::string& call, const std::string& function) {
  TempDir dir;
  const auto [out, window] = RunTraced(dir, kOpenMpi, {dir.file("no-ohiod.sock")}, binding, call, "absent");
  ExpectNothingTakenByOhio(out, window);
  if (binding == Binding::kComponent) {
    EXPECT_NE(out.find("ohio: no node of this job has an ohiod: coll/ohio left every communicator to the other "
                       "collective components"),
              std::string::npos)
        << out;
    EXPECT_EQ(out.find("handed back"), std::string::npos) << out;
    return;
  }
  EXPECT_EQ(Stats(out, function), std::make_pair(0L, static_cast<long>(kRanks * (kCalls + kSettle)))) << out;
  EXPECT_NE(out.find("rank 0: " + function + ": " + std::to_string(kCalls + kSettle) + " handed back: "),
            std::string::npos)
      << out;
}

TEST(HandBackCost, NoDaemonThroughTheShim) { ExpectNoDaemon(Binding::kShim, "alltoall", "MPI_Alltoall"); }

TEST(HandBackCost, NoDaemonComponentStandsAside) {
  ExpectNoDaemon(Binding::kComponent, "alltoallv", "MPI_Alltoallv");
}

}  // namespace
}  // namespace ohio::testing
