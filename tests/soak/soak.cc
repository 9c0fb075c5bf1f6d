// The soak: 4 real ohiods on loopback, 3 jobs of different uids and sizes doing verified
// alltoalls of random sizes (eager, staged, many rounds; v1, v2, v3) and an MPI job (real
// mpirun, the shim preloaded, MPI_ERRORS_RETURN) while a chaos loop kills ranks, restarts and
// stops daemons, sends garbage to every port and lets a hostile uid flood a daemon. It passes
// when every call it wanted was verified, no byte was wrong, every failed call named an expected
// cause (every failed MPI call MPI_ERR_OTHER with the shim's reason), and the
// daemons, once every job has left, hold no group, segment, extra descriptor or memory and are
// healthy. Prints its figures (docs/SOAK.md records a full-scale run).
#include <signal.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/rank_job.h"
#include "tests/harness/stopped_process.h"
#include "tests/soak/chaos_schedule.h"
#include "tests/soak/daemon_vitals.h"
#include "tests/soak/mpi_soak_job.h"
#include "tests/soak/port_garbage.h"
#include "tests/soak/soak_figures.h"
#include "tests/soak/soak_job.h"

namespace ohio::soak {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr uint32_t kNodes = 4;
constexpr uid_t kNobody = 65534;
constexpr uid_t kOtherUser = 4242;  // an unprivileged uid with no account: ohiod goes by the number
constexpr uid_t kHostileUser = 65533;  // the flood's: a uid of its own, none of the jobs'
constexpr auto kRunDeadline = seconds(60);
constexpr auto kGroupTimeout = milliseconds(10000);  // the daemons' --timeout-ms

struct Options {
  uint64_t calls = 1000;
  uint64_t seed = 1;
  uint32_t max_seconds = 170;
  uint32_t chaos_seconds = 0;
  uint32_t fault_gap_ms = 400;
  uint64_t max_bytes = 256 << 10;
  std::string ssb_bytes = "64KiB";
  std::string srb_bytes = "64KiB";
  uint64_t rss_growth_kib = 16 << 10;
  uint64_t mpi_calls = 600;
};

std::vector<JobSpec> Jobs(const Options& o) {
  return {
      // Every node, two ranks each.
      {"root-8x4", std::nullopt, {0, 0, 1, 1, 2, 2, 3, 3}, o.max_bytes, 40},
      // Three nodes, unevenly: two ranks on n1 and n2, one on n3.
      {"nobody-5x3", kNobody, {1, 2, 3, 1, 2}, o.max_bytes, 40},
      // One node: the group's ranks settle calls among themselves.
      {"uid4242-3x1", kOtherUser, {0, 0, 0}, o.max_bytes, 60},
  };
}

// Two nodes, two ranks each, through Open MPI and the shim; calls of at most 64 KiB per rank
// (the library's own calls, once it takes over, are slow on a loaded machine).
MpiJobSpec MpiJob(const Options& o) { return {"mpi-4x2", {2, 3}, 2, std::min<uint64_t>(o.max_bytes, 64 << 10), 200}; }

std::string Tail(const std::string& s, size_t bytes) { return s.size() <= bytes ? s : s.substr(s.size() - bytes); }

std::string FdList(pid_t pid) {
  std::string cmd = "ls -l /proc/" + std::to_string(pid) + "/fd 2>&1 | awk '{print $NF}' | sort | uniq -c | sort -rn | head -20";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (fgets(buf, sizeof(buf), p) != nullptr) out += buf;
    pclose(p);
  }
  return out;
}

class Soak {
 public:
  explicit Soak(const Options& o)
      : o_(o),
        cluster_(dir_, kNodes,
                 {"--ssb-bytes", o.ssb_bytes, "--srb-bytes", o.srb_bytes, "--timeout-ms",
                  std::to_string(kGroupTimeout.count()), "--log-level", "info"}),
        rng_(o.seed) {}

  int Run() {
    const auto start = Clock::now();
    f_.calls_wanted = o_.calls;
    if (!cluster_.Start()) {
      std::printf("the cluster did not start:\n%s\n", cluster_.Logs().c_str());
      return 1;
    }
    const auto specs = Jobs(o_);
    for (size_t j = 0; j < specs.size(); ++j) {
      const uint64_t share = o_.calls / specs.size() + (j == 0 ? o_.calls % specs.size() : 0);
      jobs_.push_back(std::make_unique<SoakJob>(specs[j], cluster_, dir_, o_.seed * 1000 + j, share));
    }
    if (o_.mpi_calls != 0) mpi_ = std::make_unique<MpiSoakJob>(MpiJob(o_), cluster_, dir_, o_.seed * 1000 + 7, o_.mpi_calls);
    const auto end = start + seconds(o_.max_seconds);
    if (WarmUp(end)) {
      Chaos(end);
      Settle();
    }
    f_.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    Stop();
    std::printf("%s", FormatFigures(f_).c_str());
    const bool pass = f_.problems.empty() && f_.wrong_bytes == 0 && f_.calls_verified >= o_.calls;
    std::printf("soak %s\n", pass ? "PASSED" : "FAILED");
    return pass ? 0 : 1;
  }

 private:
  // Every job runs once without chaos: that opens the data connections and the peer channels
  // a daemon keeps, so the descriptors and memory counted next are its steady state.
  bool WarmUp(Clock::time_point end) {
    bool all_ran = false;
    while (!all_ran && Clock::now() < end) {
      all_ran = true;
      for (auto& j : jobs_) {
        j->Step(kRunDeadline, j->runs_judged() == 0, &f_);
        all_ran &= j->runs_judged() > 0 || j->done();
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    if (!all_ran) f_.problems.push_back("the warm-up runs did not end by the deadline");
    if (!f_.problems.empty()) return false;
    if (!WaitIdle(seconds(20))) {
      f_.problems.push_back("after the warm-up a daemon still holds groups");
      return false;
    }
    for (uint32_t i = 0; i < kNodes; ++i) {
      NodeFigures n;
      n.name = cluster_.name(i);
      n.before = SampleVitals(cluster_.node(i).pid());
      f_.nodes.push_back(n);
    }
    return true;
  }

  void Chaos(Clock::time_point end) {
    const auto chaos_start = Clock::now();
    const auto window = o_.chaos_seconds != 0 ? seconds(o_.chaos_seconds) : seconds(o_.max_seconds);
    const auto faults = PlanChaos(o_.seed, std::chrono::duration_cast<milliseconds>(window), milliseconds(o_.fault_gap_ms));
    size_t next = 0;
    auto all_done = [&] {
      for (auto& j : jobs_) {
        if (!j->done()) return false;
      }
      return !mpi_ || mpi_->done();
    };
    while (!all_done()) {
      if (Clock::now() > end) {
        uint64_t verified = 0;
        for (auto& j : jobs_) verified += j->verified();
        f_.problems.push_back("not done in " + std::to_string(o_.max_seconds) + " s: " + std::to_string(verified) +
                              " of " + std::to_string(o_.calls) + " calls verified");
        break;
      }
      for (auto& j : jobs_) {
        if (stopped_) j->NoteStopped(stopped_node_);
        j->Step(kRunDeadline, true, &f_);
      }
      if (mpi_) mpi_->Step(kRunDeadline, true, &f_);
      while (next < faults.size() && Clock::now() - chaos_start >= faults[next].at) Strike(faults[next++]);
      EndStop(false);
      EndHostile(false);
      bool died = false;
      for (uint32_t i = 0; i < kNodes && !died; ++i) {
        if (!cluster_.node(i).running()) {
          f_.problems.push_back("node " + cluster_.name(i) + "'s ohiod died, not by the chaos:\n" +
                                Tail(cluster_.node(i).Log(), 4000));
          died = true;
        }
      }
      if (died) break;
      std::this_thread::sleep_for(milliseconds(10));
    }
    // The chaos ends with the calls: a stopped daemon goes on, the flood is judged.
    EndStop(true);
    EndHostile(true);
  }

  // Continues the stopped daemon once its stop has lasted (or at once if `now`).
  void EndStop(bool now) {
    if (!stopped_ || (!now && Clock::now() < stop_until_)) return;
    stopped_->Continue();
    stopped_.reset();
    const auto held = std::chrono::duration_cast<milliseconds>(Clock::now() - stop_began_);
    f_.longest_stop_ms = std::max<uint64_t>(f_.longest_stop_ms, static_cast<uint64_t>(held.count()));
    std::printf("chaos: continued %s after %lld ms\n", cluster_.name(stopped_node_).c_str(),
                static_cast<long long>(held.count()));
    std::fflush(stdout);
  }

  // Judges the hostile uid's attack once it has ended (or, if `now`, once it ends, within its
  // deadline). A control flood must have said what it sent, and only the daemon may have cut it
  // off: a flood begun just before the chaos ends is still sending its 75 MiB on a loaded
  // machine; killed then, it could not say. The large nonblocking calls must never see a wrong
  // byte; they may fail as any job's calls do under the chaos (a daemon restarted or stopped).
  void EndHostile(bool now) {
    if (hostile_.empty()) return;
    if (!now) {
      for (auto& p : hostile_) {
        if (p->Running()) return;
      }
    }
    for (auto& p : hostile_) {
      const int code = p->Wait(seconds(60));  // -1, and killed, past its deadline
      const std::string out = p->Output();
      if (attack_ == HostileAttack::kControlFlood) {
        unsigned connections = 0, complete = 0, cut_off = 0;
        const size_t at = out.find("flooded: ");
        if (at == std::string::npos ||
            std::sscanf(out.c_str() + at, "flooded: %u connections, %u sent every byte, %u cut off", &connections,
                        &complete, &cut_off) != 3 ||
            code != 0) {
          f_.problems.push_back("the hostile uid's flood exited " + std::to_string(code) + " without its tally: " +
                                Tail(out, 2000));
        }
        f_.hostile.connections += connections;
        f_.hostile.cut_off += cut_off;
        continue;
      }
      if (attack_ == HostileAttack::kJoinFlood) {
        unsigned long long sent = 0, refused = 0, disconnected = 0;
        const size_t at = out.find("join flood: ");
        // Its daemon may be restarted or stopped under it: then it could not connect (exit 1).
        if ((at == std::string::npos ||
             std::sscanf(out.c_str() + at, "join flood: %llu joins sent, %llu refused, %llu disconnected", &sent,
                         &refused, &disconnected) != 3) &&
            code != 1) {
          f_.problems.push_back("the hostile uid's join flood exited " + std::to_string(code) + " without its tally: " +
                                Tail(out, 2000));
        }
        f_.hostile.joins += sent;
        continue;
      }
      // "calls N" at the end, or "call N failed: ..." once the chaos took its daemon: N done.
      unsigned long long calls = 0;
      const size_t at = out.find("calls ");
      const size_t failed = out.find("call ");
      if (at != std::string::npos) {
        std::sscanf(out.c_str() + at, "calls %llu", &calls);
      } else if (failed != std::string::npos) {
        std::sscanf(out.c_str() + failed, "call %llu", &calls);
      }
      f_.hostile.large_calls += calls;
      if (out.find("WRONG") != std::string::npos || (code != 0 && code != 1)) {
        f_.problems.push_back("the hostile uid's large nonblocking calls exited " + std::to_string(code) + ": " +
                              Tail(out, 2000));
      }
    }
    hostile_.clear();
  }

  void Strike(const Fault& fault) {
    switch (fault.kind) {
      case FaultKind::kKillRank: {
        std::vector<SoakJob*> running;
        for (auto& j : jobs_) {
          if (j->running()) running.push_back(j.get());
        }
        const std::string victim =
            running.empty() ? "" : running[fault.pick % running.size()]->KillRank(fault.pick >> 8);
        if (victim.empty()) return;  // no run without a dead rank yet: nothing to kill, nothing counted
        std::printf("chaos: killed %s\n", victim.c_str());
        break;
      }
      case FaultKind::kRestartDaemon: {
        const uint32_t node = static_cast<uint32_t>(fault.pick % kNodes);
        // A stopped daemon is continued before it is killed: its pid is then no longer ours to signal.
        if (stopped_ && stopped_node_ == node) EndStop(true);
        cluster_.node(node).Kill();
        ++f_.nodes[node].restarts;
        std::printf("chaos: restarting %s\n", cluster_.name(node).c_str());
        if (!cluster_.StartNode(node)) {
          f_.problems.push_back("node " + cluster_.name(node) + " did not come back:\n" +
                                Tail(cluster_.node(node).Log(), 4000));
        }
        break;
      }
      case FaultKind::kGarbage: {
        for (uint32_t i = 0; i < kNodes; ++i) {
          // A stopped daemon accepts nothing: its backlogs would fill and the connects block.
          if (stopped_ && stopped_node_ == i) continue;
          testing::Daemon& d = cluster_.node(i);
          const std::pair<std::string, GarbageSent> sent[] = {
              {"control socket", SendGarbageToUnix(d.socket(), rng_)},
              {"admin socket", SendGarbageToUnix(d.admin_socket(), rng_)},
              {"peer port", SendGarbageToTcp(cluster_.peer_port(i), rng_)},
              {"data port", SendGarbageToTcp(cluster_.data_port(i), rng_)},
          };
          for (const auto& [port, g] : sent) {
            f_.garbage_connections += g.connections;
            if (g.refused != 0) {
              f_.problems.push_back("node " + cluster_.name(i) + "'s " + port + " refused " +
                                    std::to_string(g.refused) + " connections");
            }
          }
        }
        std::printf("chaos: garbage to every port of every daemon\n");
        break;
      }
      case FaultKind::kStopDaemon: {
        if (stopped_) return;  // one node stopped at a time: nothing done, nothing counted
        stopped_node_ = static_cast<uint32_t>(fault.pick % kNodes);
        stop_began_ = Clock::now();
        const milliseconds length = StopLength(fault.pick, kGroupTimeout);
        stop_until_ = stop_began_ + length;
        stopped_ = std::make_unique<testing::StoppedForScope>(cluster_.node(stopped_node_).pid());
        if (!stopped_->stopped()) f_.problems.push_back("node " + cluster_.name(stopped_node_) + " did not stop");
        std::printf("chaos: stopped %s for %lld ms\n", cluster_.name(stopped_node_).c_str(),
                    static_cast<long long>(length.count()));
        break;
      }
      case FaultKind::kHostileUid: {
        if (!hostile_.empty()) return;  // one attack at a time
        uint32_t node = static_cast<uint32_t>(fault.pick % kNodes);
        if (stopped_ && stopped_node_ == node) node = (node + 1) % kNodes;
        // The attacks take turns, so that a short run makes each of them.
        attack_ = static_cast<HostileAttack>(attacks_ % kHostileAttacks);
        const std::string socket = cluster_.node(node).socket();
        const std::string out = dir_.file("hostile" + std::to_string(++attacks_));
        switch (attack_) {
          case HostileAttack::kControlFlood:
            // Connections that say hello and announce 4 MiB, of which they send 256 KiB and hold:
            // 300 of them would hold 75 MiB, past the uid's bound (user-max-pending-bytes, 64
            // MiB), so the daemon must cut some off while the jobs' ranks are served.
            hostile_.push_back(std::make_unique<testing::Process>(
                std::vector<std::string>{testing::ToolAnyoneCanRun(dir_, "tests/tools/control_flood"), "--socket",
                                         socket, "--connections", "300", "--hello", "--announce",
                                         std::to_string(4 << 20), "--send", std::to_string(256 << 10), "--hold-ms",
                                         "1000"},
                out + ".out", kHostileUser));
            std::printf("chaos: uid %u floods %s's control socket\n", kHostileUser, cluster_.name(node).c_str());
            break;
          case HostileAttack::kLargeNonblocking:
            // Two one-rank groups moving 32 MiB nonblocking calls back to back for 2 s: the
            // daemon must hold a bounded staging for them, and serve the jobs' calls between.
            for (int g = 0; g < 2; ++g) {
              hostile_.push_back(std::make_unique<testing::Process>(
                  std::vector<std::string>{testing::ToolAnyoneCanRun(dir_, "tests/tools/large_ialltoall_rank"),
                                           "--socket", socket, "--key",
                                           testing::KeyHex("hostile" + std::to_string(attacks_) + "-" +
                                                           std::to_string(g)),
                                           "--size", "1", "--rank", "0", "--bytes", std::to_string(32 << 20),
                                           "--seconds", "2"},
                  out + "-" + std::to_string(g) + ".out", kHostileUser));
            }
            std::printf("chaos: uid %u posts large nonblocking calls to %s\n", kHostileUser,
                        cluster_.name(node).c_str());
            break;
          case HostileAttack::kJoinFlood:
            // Eight connections sending joins for a million ranks (1 MiB each) for 2 s: the
            // control thread must refuse them from their length and serve the jobs' ranks in turn.
            hostile_.push_back(std::make_unique<testing::Process>(
                std::vector<std::string>{testing::ToolAnyoneCanRun(dir_, "tests/tools/control_join_flood"),
                                         "--socket", socket, "--node", cluster_.name(node), "--connections", "8",
                                         "--ranks", "1048576", "--duration-ms", "2000"},
                out + ".out", kHostileUser));
            std::printf("chaos: uid %u floods %s's control socket with oversized joins\n", kHostileUser,
                        cluster_.name(node).c_str());
            break;
        }
        break;
      }
    }
    std::fflush(stdout);
    ++f_.faults[FaultName(fault.kind)];
  }

  // Segments node i's registration cache holds (-1 if it does not answer).
  int CachedSegments(uint32_t i) {
    const testing::StatusQuery q = testing::QueryStatus(cluster_.node(i).admin_socket());
    return q.ok ? static_cast<int>(q.reply.segment_cache().cached_segments()) : -1;
  }

  // Every daemon answers its admin Status with no group and no segment memory in use.
  bool WaitIdle(milliseconds deadline) {
    const auto end = Clock::now() + deadline;
    for (;;) {
      bool idle = true;
      for (uint32_t i = 0; i < kNodes && idle; ++i) {
        testing::StatusQuery q = testing::QueryStatus(cluster_.node(i).admin_socket());
        idle = q.ok && q.reply.groups() == 0 && q.reply.segment_bytes_in_use() == 0;
      }
      if (idle) return true;
      if (Clock::now() > end) return false;
      std::this_thread::sleep_for(milliseconds(100));
    }
  }

  // Once every job has left: what each daemon still holds, against the steady state before
  // the chaos (a restarted daemon's too: it serves the same nodes and jobs).
  void Settle() {
    if (f_.nodes.size() != kNodes) return;
    const auto end = Clock::now() + seconds(30);
    bool settled = false;
    while (!settled && Clock::now() < end) {
      settled = WaitIdle(seconds(1));
      for (uint32_t i = 0; i < kNodes && settled; ++i) {
        const DaemonVitals v = SampleVitals(cluster_.node(i).pid());
        const int cached = CachedSegments(i);
        settled = v.memfds == cached && v.memfd_maps == cached && v.fds <= f_.nodes[i].before.fds + cached;
      }
      if (!settled) std::this_thread::sleep_for(milliseconds(200));
    }
    for (uint32_t i = 0; i < kNodes; ++i) {
      NodeFigures& n = f_.nodes[i];
      const std::string who = "node " + n.name;
      const pid_t pid = cluster_.node(i).pid();
      n.after = SampleVitals(pid);
      testing::StatusQuery q = testing::QueryStatus(cluster_.node(i).admin_socket());
      if (!q.ok) {
        f_.problems.push_back(who + " does not answer its admin Status: " + q.error);
      } else if (q.reply.groups() != 0 || q.reply.segment_bytes_in_use() != 0 || q.reply.staging_bytes_in_use() != 0) {
        f_.problems.push_back(who + " still holds " + std::to_string(q.reply.groups()) + " groups, " +
                              std::to_string(q.reply.segment_bytes_in_use()) + " bytes of segments, " +
                              std::to_string(q.reply.staging_bytes_in_use()) + " bytes of staging");
      }
      // The registration cache keeps segments of ended groups: each is one memfd and mapping.
      const int cached = CachedSegments(i);
      if (n.after.memfds != cached || n.after.memfd_maps != cached) {
        f_.problems.push_back(who + " still holds " + std::to_string(n.after.memfds) + " memfds, " +
                              std::to_string(n.after.memfd_maps) + " memfd mappings, " + std::to_string(cached) +
                              " of them cached");
      }
      // Fewer is no leak: a node restarted near the end has not met every peer again yet.
      if (n.after.fds > n.before.fds + cached) {
        f_.problems.push_back(who + " has " + std::to_string(n.after.fds) + " fds open, " +
                              std::to_string(n.before.fds) + " before the chaos; now:\n" + FdList(pid));
      }
      if (n.after.rss_kib > n.before.rss_kib + o_.rss_growth_kib) {
        f_.problems.push_back(who + "'s RSS grew from " + std::to_string(n.before.rss_kib) + " to " +
                              std::to_string(n.after.rss_kib) + " KiB, more than the " +
                              std::to_string(o_.rss_growth_kib) + " KiB allowed");
      }
      testing::Process health({testing::RunfilePath("client/ohioctl"), "--socket", cluster_.node(i).admin_socket(),
                               "health"},
                              dir_.file(n.name + ".health"));
      if (int code = health.Wait(seconds(20)); code != 0) {
        f_.problems.push_back(who + ": ohioctl health exited " + std::to_string(code) + ": " + health.Output());
      }
    }
  }

  // SIGTERM to every daemon: each must shut down cleanly.
  void Stop() {
    jobs_.clear();  // kills whatever rank is left (only after a failure)
    mpi_.reset();
    for (uint32_t i = 0; i < kNodes; ++i) {
      if (!cluster_.node(i).running()) continue;
      if (int code = cluster_.node(i).Stop(); code != 0) {
        f_.problems.push_back("node " + cluster_.name(i) + "'s ohiod exited " + std::to_string(code) +
                              " on SIGTERM:\n" + Tail(cluster_.node(i).Log(), 4000));
      }
    }
  }

  Options o_;
  testing::TempDir dir_;
  testing::Cluster cluster_;
  std::mt19937_64 rng_;
  std::vector<std::unique_ptr<SoakJob>> jobs_;
  std::unique_ptr<MpiSoakJob> mpi_;
  // The one daemon the chaos holds stopped, if any, and until when.
  std::unique_ptr<testing::StoppedForScope> stopped_;
  uint32_t stopped_node_ = 0;
  Clock::time_point stop_began_, stop_until_;
  // The hostile uid's attack under way, if any: its processes, and which attack it is.
  enum class HostileAttack { kControlFlood, kLargeNonblocking, kJoinFlood };
  static constexpr uint64_t kHostileAttacks = 3;
  std::vector<std::unique_ptr<testing::Process>> hostile_;
  HostileAttack attack_ = HostileAttack::kControlFlood;
  uint32_t attacks_ = 0;
  Figures f_;
};

}  // namespace
}  // namespace ohio::soak

int main(int argc, char** argv) {
  ohio::soak::Options o;
  CLI::App app(
      "soak: 4 ohiods, 3 jobs of different uids doing verified alltoalls of random sizes and an MPI job (Open MPI "
      "with the shim), under chaos (rank kills, daemon restarts and stops, garbage to every port, a hostile uid's "
      "floods); checks bytes, error causes, leaks and health at the end. Runs as root (ranks of two jobs and the "
      "flood run as other uids).");
  app.add_option("--calls", o.calls, "Verified alltoalls to reach, over all jobs")->capture_default_str();
  app.add_option("--seed", o.seed, "Seed of the sizes, the patterns and the chaos")->capture_default_str();
  app.add_option("--max-seconds", o.max_seconds, "The soak fails if its calls are not all verified by then")
      ->capture_default_str();
  app.add_option("--chaos-seconds", o.chaos_seconds, "Chaos stops after this long (0: when the calls are done)")
      ->capture_default_str();
  app.add_option("--fault-gap-ms", o.fault_gap_ms, "Mean time between two faults")->capture_default_str();
  app.add_option("--max-bytes", o.max_bytes, "Largest bytes per rank of a call")->capture_default_str();
  app.add_option("--ssb-bytes", o.ssb_bytes, "Daemons' SSB per group: calls larger than it are staged in rounds")
      ->capture_default_str();
  app.add_option("--srb-bytes", o.srb_bytes, "Daemons' SRB per group")->capture_default_str();
  app.add_option("--rss-growth-kib", o.rss_growth_kib, "Most a daemon's RSS may grow over the soak")
      ->capture_default_str();
  app.add_option("--mpi-calls", o.mpi_calls,
                 "MPI_Alltoall calls of the MPI job (mpirun runs of 200 calls on 2 nodes x 2 ranks; 0: no MPI job)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (o.calls == 0 || o.max_seconds == 0 || o.fault_gap_ms == 0 || o.max_bytes == 0) {
    std::fprintf(stderr, "--calls, --max-seconds, --fault-gap-ms and --max-bytes must be positive\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  return ohio::soak::Soak(o).Run();
}
