// An upgrade under a running job: ohiod stopped (SIGTERM, as `systemctl stop` and a package's
// upgrade do) and a new binary started in its place while an Open MPI job under
// MPI_ERRORS_RETURN makes MPI_Alltoall calls (tests/mpi/daemon/daemon_upgrade_check.c: 6 phases, each
// a new communicator of 400 calls; the daemon is replaced halfway through phase 2). Then:
//  - no call returns success with a wrong byte, and every call has the same outcome on every
//    rank;
//  - the calls of the communicator in use when the daemon went are not failed: across nodes the
//    ranks agree where the MPI library takes over (client/mpi/mpi_shim_state.h), and it runs the
//    rest; on one node its ranks go on through ohio among themselves;
//  - communicators made after the new daemon is up are served by it (its own counters say so);
//  - the job ends normally.
// Under MPI's default MPI_ERRORS_ARE_FATAL a call the stop splits ends the job with its reason,
// never a hang or a wrong byte. A job started while the daemon is down is served once it
// listens. And a reload (SIGHUP, as `systemctl reload`) in the middle of a job changes the settings it
// reloads with no call failing and every call served.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <thread>

#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/process.h"
#include "tests/harness/wait_until.h"
#include "tests/mpi/mpi_job.h"

namespace ohio::testing {
namespace {

constexpr int kPhases = 6;
constexpr int kCalls = 400;
constexpr int kStopPhase = 2;
constexpr int kRanks = 4;
// MPI_ERR_OTHER in Open MPI's mpi.h, which this test, not an MPI program, does not include.
constexpr int kOpenMpiErrOther = 16;

struct PhaseTally {
  long ok = 0, failed = 0, differing = 0;
};

struct Tally {
  bool read = false;
  long calls = 0, ok = 0, failed = 0, differing = 0, wrong_bytes = 0;
  std::vector<PhaseTally> phases;
};

Tally ReadTally(const std::string& out) {
  Tally t;
  std::smatch m;
  if (!std::regex_search(out, m,
                         std::regex(R"(rank 0: calls (\d+) ok (\d+) failed (\d+) differing (\d+) wrong_bytes (\d+))"))) {
    return t;
  }
  t = {true, std::stol(m[1]), std::stol(m[2]), std::stol(m[3]), std::stol(m[4]), std::stol(m[5]), {}};
  const std::regex phase(R"(rank 0: phase (\d+): ok (\d+) failed (\d+) differing (\d+))");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), phase); it != std::sregex_iterator(); ++it) {
    t.phases.push_back({std::stol((*it)[2]), std::stol((*it)[3]), std::stol((*it)[4])});
  }
  return t;
}

// The built daemon copied to `dir` under another name: the "new binary" of the upgrade, a file
// of its own that the old process never ran.
std::string NewBinary(const TempDir& dir) {
  const std::string path = dir.file("ohiod-new");
  std::filesystem::copy_file(RunfilePath("daemon/ohiod"), path);
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

// Runs the check (under MPI_ERRORS_RETURN unless `fatal_errors`); once rank 0 is halfway
// through the stop phase, `replace` stops the daemon and starts the new one (false: it did not
// come up), and then the job is let go on. The job's exit code, or -1 if it had to be killed.
int RunThroughReplacement(const TempDir& dir, const std::vector<std::string>& sockets, int ppn, Binding binding,
                          const std::string& bytes, const std::function<bool()>& replace, std::string* out,
                          bool fatal_errors = false) {
  const std::string stop_file = dir.file("stop"), resume_file = dir.file("resume");
  // Every call goes to ohio, whatever the selection table says: the daemon's replacement is the test.
  std::vector<std::pair<std::string, std::string>> env = {
      {"CHECK_STOP_FILE", stop_file}, {"CHECK_RESUME_FILE", resume_file}, kServeEveryCall};
  if (fatal_errors) env.emplace_back("CHECK_FATAL_ERRORS", "1");
  Process job(MpiRun(kOpenMpi, kRanks, sockets, ppn, env, "daemon/daemon_upgrade_check",
                     {std::to_string(kPhases), std::to_string(kCalls), bytes, std::to_string(kStopPhase)}, binding),
              dir.file("mpirun.out"));
  EXPECT_TRUE(WaitUntil([&] { return std::ifstream(stop_file).good() || !job.Running(); }, std::chrono::seconds(120)));
  EXPECT_TRUE(std::ifstream(stop_file).good()) << job.Output();
  EXPECT_TRUE(replace());
  std::ofstream(resume_file).put('\n');
  const int code = job.Wait(std::chrono::seconds(300));
  *out = job.Output();
  std::printf("%s", out->c_str());
  return code;
}

// The same under MPI_ERRORS_RETURN, where the job must end normally: its tally.
Tally RunThroughReplacementToTheEnd(const TempDir& dir, const std::vector<std::string>& sockets, int ppn,
                                    Binding binding, const std::string& bytes, const std::function<bool()>& replace,
                                    std::string* out) {
  EXPECT_EQ(RunThroughReplacement(dir, sockets, ppn, binding, bytes, replace, out), 0) << *out;
  const Tally t = ReadTally(*out);
  EXPECT_TRUE(t.read) << "no tally\n" << *out;
  return t;
}

// What every replacement must leave: all calls made, none right on one rank and wrong on
// another, no success with a wrong byte, no call failed, the phases before it all served
// through the old daemon and the job's calls after it through the new one.
void ExpectNothingLost(const Tally& t, const std::string& out) {
  EXPECT_EQ(t.calls, kPhases * kCalls) << out;
  EXPECT_EQ(t.wrong_bytes, 0) << "success with wrong bytes\n" << out;
  EXPECT_EQ(t.differing, 0) << out;
  EXPECT_EQ(t.failed, 0) << out;
  EXPECT_EQ(t.ok, kPhases * kCalls) << out;
  ASSERT_EQ(t.phases.size(), static_cast<size_t>(kPhases)) << out;
  const auto [served, fell] = Stats(out);
  // Every rank's calls before the stop, and those of the phases after the new daemon was up.
  const long before = kStopPhase * kCalls + kCalls / 2, after = (kPhases - kStopPhase - 1) * kCalls;
  EXPECT_GE(served, kRanks * (before + after - 1)) << out;
  EXPECT_LE(fell, kRanks * (kCalls / 2 + 1)) << out;
  std::printf("served %ld, handed back %ld (the rest of the communicator the old daemon served)\n", served, fell);
}

// Across two nodes, node 1's ohiod replaced: the new daemon serves every call of the
// communicators made after it came up, with node 0's daemon, which reconnects to it.
void UpgradeAcrossNodes(Binding binding, const std::string& bytes) {
  TempDir dir;
  // The timeout bounds the group's setup across nodes (the first dial of the peer daemon), which
  // on a loaded 2-core box has taken more than 3 s.
  Cluster cluster(dir, 2, {"--timeout-ms", "10000"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::string new_binary = NewBinary(dir);
  std::string out;
  const Tally t = RunThroughReplacementToTheEnd(
      dir, {cluster.node(0).socket(), cluster.node(1).socket()}, 2, binding, bytes,
      [&] {
        // A clean stop: the daemon fails its open groups ("ohiod is shutting down") and exits 0.
        EXPECT_EQ(cluster.node(1).Stop(), 0) << cluster.Logs();
        cluster.node(1).UseBinary(new_binary);
        return cluster.StartNode(1);
      },
      &out);
  ExpectNothingLost(t, out);
  const admin::CountersReply fresh = QueryCounters(cluster.node(1).admin_socket());
  // The phases after the replacement, every call of each once on the new daemon.
  EXPECT_GE(fresh.collectives_served(), static_cast<uint64_t>((kPhases - kStopPhase - 1) * kCalls))
      << fresh.DebugString() << cluster.Logs();
  EXPECT_EQ(fresh.collectives_failed(), 0u) << fresh.DebugString();
  const StatusQuery status = QueryStatus(cluster.node(1).admin_socket());
  ASSERT_TRUE(status.ok) << status.error;
  EXPECT_EQ(status.reply.pid(), static_cast<uint32_t>(cluster.node(1).pid()));
}

TEST(DaemonUpgrade, AcrossNodesThroughTheShim) { UpgradeAcrossNodes(Binding::kShim, "4096"); }

TEST(DaemonUpgrade, AcrossNodesThroughTheComponent) { UpgradeAcrossNodes(Binding::kComponent, "65536"); }

// On one node: the group's ranks meet in its segment, which needs no daemon for a blocking
// call, so the stopping daemon leaves the group to them rather than fail it under a round they
// are in (where the rank arriving last would complete the call and a rank still waiting would
// fail it). The communicator in use goes on through ohio, every call of the job is served, none
// is handed back, and the new daemon serves the communicators made after it.
TEST(DaemonUpgrade, OnOneNode) {
  TempDir dir;
  Daemon daemon(dir, {"--timeout-ms", "10000"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const std::string new_binary = NewBinary(dir);
  std::string out, old_log;
  const Tally t = RunThroughReplacementToTheEnd(
      dir, {daemon.socket()}, kRanks, Binding::kShim, "4096",
      [&] {
        EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
        old_log = daemon.Log();
        daemon.UseBinary(new_binary);
        return daemon.Start();
      },
      &out);
  ExpectNothingLost(t, out);
  EXPECT_EQ(Stats(out), std::make_pair(static_cast<long>(kRanks) * kPhases * kCalls, 0L)) << out;
  EXPECT_NE(old_log.find("1 group(s) on this node alone go on among their ranks without ohiod"), std::string::npos)
      << old_log;
  EXPECT_EQ(QueryStatus(daemon.admin_socket()).reply.pid(), static_cast<uint32_t>(daemon.pid()));
}

// A job started while its node's ohiod is down (between an upgrade's stop and start, or before
// the unit came up): its first communicators' calls are handed back, with every byte right, and those made
// once the daemon listens are served by it.
TEST(DaemonUpgrade, AJobStartedWhileTheDaemonIsDownIsServedOnceItListens) {
  TempDir dir;
  Daemon daemon(dir, {"--timeout-ms", "10000"});
  std::string out;
  const Tally t = RunThroughReplacementToTheEnd(
      dir, {daemon.socket()}, kRanks, Binding::kShim, "4096", [&] { return daemon.Start(); }, &out);
  EXPECT_EQ(t.calls, kPhases * kCalls) << out;
  EXPECT_EQ(t.ok, kPhases * kCalls) << out;
  EXPECT_EQ(t.failed, 0) << out;
  EXPECT_EQ(t.wrong_bytes, 0) << out;
  // The phases up to the stop phase had no daemon; the rest had it from their start.
  const long after = (kPhases - kStopPhase - 1) * kCalls;
  EXPECT_EQ(Stats(out), std::make_pair(static_cast<long>(kRanks) * after, kRanks * (kPhases * kCalls - after))) << out;
  EXPECT_NE(out.find("no ohiod reachable"), std::string::npos) << out;
}

// Under MPI's default handler, MPI_ERRORS_ARE_FATAL, the shim keeps no copy of a call to send
// again, so a call the stop splits between ranks fails on those that did not complete it, and
// the job ends: with MPI_ERR_OTHER and the reason, within moments, never a hang and never a
// wrong byte. Where the stop splits no call, the job goes on as under MPI_ERRORS_RETURN.
TEST(DaemonUpgrade, UnderTheDefaultHandlerASplitCallEndsTheJobWithTheReason) {
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    TempDir dir;
    Cluster cluster(dir, 2, {"--timeout-ms", "10000"});
    ASSERT_TRUE(cluster.Start()) << cluster.Logs();
    const std::string new_binary = NewBinary(dir);
    std::string out;
    const int code = RunThroughReplacement(
        dir, {cluster.node(0).socket(), cluster.node(1).socket()}, 2, Binding::kShim, "4096",
        [&] {
          EXPECT_EQ(cluster.node(1).Stop(), 0) << cluster.Logs();
          cluster.node(1).UseBinary(new_binary);
          return cluster.StartNode(1);
        },
        &out, /*fatal_errors=*/true);
    ASSERT_NE(code, -1) << "the job hung\n" << out;
    // Each rank says at once of a call that returned success with a wrong byte.
    EXPECT_EQ(out.find("WRONG"), std::string::npos) << out;
    if (code == 0) {
      const Tally t = ReadTally(out);
      EXPECT_EQ(t.ok, kPhases * kCalls) << out;
      EXPECT_EQ(t.wrong_bytes, 0) << out;
      std::printf("run %d: the stop split no call; the job went on\n", run);
    } else {
      // MPI_ERRORS_ARE_FATAL aborts with the error code, and mpirun exits with it. The code, not
      // Open MPI's own message: when several ranks abort at once, mpirun can lose their help
      // messages ("ORTE_ERROR_LOG: Data unpack had inadequate space in show_help.c").
      EXPECT_EQ(code, kOpenMpiErrOther) << out;
      EXPECT_NE(out.find("MPI_Alltoall failed: the ohio group failed"), std::string::npos) << out;
      std::printf("run %d: a split call ended the job (exit %d)\n", run, code);
    }
  }
}

// `systemctl reload` in the middle of a job: SIGHUP re-reads the config, the new timeout is in
// force, and no call of the job fails or is handed back.
TEST(DaemonUpgrade, ReloadChangesSettingsWithNoCallFailing) {
  TempDir dir;
  std::vector<std::string> confs;
  for (int i = 0; i < 2; ++i) {
    confs.push_back(dir.file("node" + std::to_string(i) + ".conf"));
    std::ofstream(confs.back()) << "timeout-ms = 10000\n";
  }
  Cluster cluster(dir, 2);
  for (int i = 0; i < 2; ++i) cluster.AddFlags(i, {"--config", confs[i]});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  std::string out;
  const Tally t = RunThroughReplacementToTheEnd(
      dir, {cluster.node(0).socket(), cluster.node(1).socket()}, 2, Binding::kShim, "4096",
      [&] {
        for (int i = 0; i < 2; ++i) {
          std::ofstream(confs[i]) << "timeout-ms = 20000\nspin-us = 7\n";
          EXPECT_EQ(kill(cluster.node(i).pid(), SIGHUP), 0);
        }
        bool reloaded = true;
        for (int i = 0; i < 2; ++i) {
          reloaded &= WaitUntil(
              [&] {
                const StatusQuery s = QueryStatus(cluster.node(i).admin_socket());
                for (const auto& e : s.reply.config()) {
                  if (e.key() == "timeout-ms") return e.value() == "20000";
                }
                return false;
              },
              std::chrono::seconds(10));
        }
        return reloaded;
      },
      &out);
  EXPECT_EQ(t.calls, kPhases * kCalls) << out;
  EXPECT_EQ(t.ok, kPhases * kCalls) << out;
  EXPECT_EQ(t.failed, 0) << out;
  EXPECT_EQ(t.wrong_bytes, 0) << out;
  EXPECT_EQ(Stats(out), std::make_pair(static_cast<long>(kRanks) * kPhases * kCalls, 0L)) << out;
  for (int i = 0; i < 2; ++i) {
    EXPECT_NE(cluster.node(i).Log().find("SIGHUP: timeout-ms = 20000 (was 10000)"), std::string::npos)
        << cluster.node(i).Log();
    EXPECT_EQ(QueryCounters(cluster.node(i).admin_socket()).collectives_failed(), 0u);
  }
}

}  // namespace
}  // namespace ohio::testing
