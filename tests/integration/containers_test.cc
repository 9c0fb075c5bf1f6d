// Ranks in containers, as Apptainer (--containall) and podman-hpc run them: their own PID and
// mount namespaces, /proc, /tmp and /dev/shm of their own, and the host's ohiod socket
// bind-mounted at libohio's default path (tests/harness/container.h, built with unshare). A
// real ohiod runs on the host. Both layouts: every rank of the job in one container (one PID
// namespace), and one container per rank (a namespace each, where every rank has the same pid,
// so that a pid read from the segment would name the reader itself). Checked: the join (ohiod
// sees the ranks' host pids), blocking calls (read in place in one container, through shared
// memory across containers, alltoall and alltoallv, and there an alltoallv row only reading in
// place could serve refused alike on every rank), nonblocking calls (ohiod opens
// /proc/<pid>/mem of processes in another PID namespace), the segment cache's /proc scan
// finding a holder in a container, the stopped-daemon check (which a container cannot make:
// said so, and bounded), and a hostile user's process in the same or another container, which
// reaches neither the job's memory nor its segment nor its group. Every byte is verified by
// the rank tools.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/container.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/rank_job.h"
#include "tests/harness/scoped_env.h"
#include "tests/harness/stage_lines.h"
#include "tests/harness/stopped_process.h"

namespace ohio::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kDeadline = seconds(60);
constexpr uid_t kNobody = 65534;
// A user with no name: the hostile one.
constexpr uid_t kIntruder = 4242;
constexpr const char* kSeparateNamespaces = "not all in one PID namespace";

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Ranks of one job started in containers: rank r in *in(r), as uid nobody, from a copy of
// `tool` (a runfile path) in the test's directory, talking to the socket bound in.
class ContainedJob {
 public:
  ContainedJob(const TempDir& dir, const std::string& tool, const std::string& name, uint32_t size,
               const std::function<const Container*(uint32_t)>& in, const std::vector<std::string>& common,
               const std::function<std::vector<std::string>(uint32_t)>& extra = nullptr,
               const std::vector<std::string>& launcher = {}) {
    const std::string copy = ToolAnyoneCanRun(dir, tool);
    const std::string inside = std::string(Container::kShared) + copy.substr(copy.rfind('/'));
    for (uint32_t r = 0; r < size; ++r) {
      std::vector<std::string> argv = launcher;
      argv.insert(argv.end(), {inside, "--socket", Container::kSocket, "--key", KeyHex(name), "--size",
                               std::to_string(size), "--rank", std::to_string(r)});
      argv.insert(argv.end(), common.begin(), common.end());
      if (extra) {
        const auto more = extra(r);
        argv.insert(argv.end(), more.begin(), more.end());
      }
      ranks_.push_back(in(r)->Run(argv, dir.file(name + ".rank" + std::to_string(r) + ".out"), kNobody));
    }
  }

  Process& rank(uint32_t r) { return *ranks_[r]; }
  uint32_t size() const { return static_cast<uint32_t>(ranks_.size()); }
  // The host's pid of rank r (the child of the nsenter that started it).
  pid_t HostPid(uint32_t r) const { return ChildOf(ranks_[r]->pid(), seconds(5)); }
  std::vector<int> Wait(std::chrono::milliseconds deadline) {
    const auto end = std::chrono::steady_clock::now() + deadline;
    std::vector<int> codes;
    for (auto& p : ranks_) {
      const auto left = std::chrono::duration_cast<milliseconds>(end - std::chrono::steady_clock::now());
      codes.push_back(p->Wait(std::max(left, milliseconds(1))));
    }
    return codes;
  }
  std::string Outputs() const {
    std::string s;
    for (const auto& p : ranks_) s += p->Output();
    return s;
  }

 private:
  std::vector<std::unique_ptr<Process>> ranks_;
};

void ExpectAllPass(ContainedJob& job, const std::string& logs) {
  for (int c : job.Wait(kDeadline)) EXPECT_EQ(c, 0) << job.Outputs() << logs;
}

// One container for the whole job, or one per rank.
struct Layout {
  std::vector<std::unique_ptr<Container>> containers;
  std::function<const Container*(uint32_t)> in;
};
Layout OneContainer(const TempDir& dir, const std::string& socket) {
  Layout l;
  l.containers.push_back(std::make_unique<Container>(dir, "job", socket));
  const Container* c = l.containers.back().get();
  l.in = [c](uint32_t) { return c; };
  return l;
}
Layout ContainerPerRank(const TempDir& dir, const std::string& socket, uint32_t ranks) {
  Layout l;
  for (uint32_t r = 0; r < ranks; ++r) {
    l.containers.push_back(std::make_unique<Container>(dir, "rank" + std::to_string(r), socket));
  }
  const auto* all = &l.containers;
  l.in = [all](uint32_t r) { return (*all)[r].get(); };
  return l;
}
bool AllReady(const Layout& l) {
  for (const auto& c : l.containers) {
    if (!c->ready()) return false;
  }
  return true;
}
std::string Logs(const Layout& l) {
  std::string s;
  for (const auto& c : l.containers) s += c->Log();
  return s;
}

StageFields StageLine(const std::string& output, uint64_t bytes) {
  for (StageFields& fields : StageLines(output)) {
    if (fields["bytes"] == static_cast<double>(bytes)) return fields;
  }
  return {};
}

constexpr uint32_t kRanks = 3;
constexpr uint32_t kIterations = 5;
constexpr uint64_t kSmall = 64;
constexpr uint64_t kLarge = 65536;

// The blocking alltoalls of a job laid out as `layout` says, every byte checked: the daemon
// sees each rank by its host pid and counts every call; the large calls are read in place
// (`in_place`) or copied through the shared segment, said once per rank. The ranks run without
// address space randomization (setarch -R), as the same program in containers alike then lays
// out its buffers alike: a rank that read "another rank's" buffer at a pid that names itself
// in its own namespace would find its own bytes there, not fail.
void RunBlockingJob(const TempDir& dir, Daemon& daemon, Layout& layout, bool in_place) {
  ASSERT_TRUE(AllReady(layout)) << Logs(layout);
  // Read in place from 32 KiB whatever the box's cores (client/libohio/single_copy.h).
  ScopedEnv single_copy("OHIO_SINGLE_COPY_BYTES", "32768");
  StageTimes on;
  ContainedJob job(dir, RankJob::kAlltoallRank, "blocking", kRanks, layout.in,
                   {"--bytes", std::to_string(kSmall), std::to_string(kLarge), "--iterations",
                    std::to_string(kIterations), "--hold-after-first", std::string(Container::kShared) + "/joined"},
                   nullptr, {"/usr/bin/setarch", "-R"});
  for (uint32_t r = 0; r < kRanks; ++r) ASSERT_TRUE(job.rank(r).WaitForOutput("holding", kDeadline)) << job.Outputs();
  // SO_PEERCRED gave ohiod each rank's pid as the host knows it, not the container's.
  const std::string key = KeyHex("blocking");
  for (uint32_t r = 0; r < kRanks; ++r) {
    const pid_t host = job.HostPid(r);
    ASSERT_GT(host, 0);
    EXPECT_NE(PidInItsNamespace(host), host);
    EXPECT_TRUE(Contains(daemon.Log(), "group " + key + ": rank " + std::to_string(r) + " joined (pid " +
                                           std::to_string(host) + ", uid 65534)"))
        << "rank " << r << " host pid " << host << "\n" << daemon.Log();
  }
  std::ofstream(dir.file("joined")) << "go\n";
  ExpectAllPass(job, daemon.Log() + Logs(layout));
  for (uint32_t r = 0; r < kRanks; ++r) {
    const std::string out = job.rank(r).Output();
    EXPECT_TRUE(Contains(out, "ok bytes=" + std::to_string(kSmall) + " iterations=" + std::to_string(kIterations)))
        << out;
    EXPECT_TRUE(Contains(out, "ok bytes=" + std::to_string(kLarge) + " iterations=" + std::to_string(kIterations)))
        << out;
    const StageFields f = StageLine(out, kLarge);
    ASSERT_FALSE(f.empty()) << out;
    if (in_place) {
      EXPECT_GT(f.at("read_peers_us"), 0.0) << out;
      EXPECT_EQ(f.at("copy_in_us"), 0.0) << out;
      EXPECT_FALSE(Contains(out, kSeparateNamespaces)) << out;
    } else {
      EXPECT_EQ(f.at("read_peers_us"), 0.0) << out;
      EXPECT_GT(f.at("copy_in_us"), 0.0) << out;
      EXPECT_TRUE(Contains(out, "ohio: the ranks of this group on this node are " + std::string(kSeparateNamespaces)))
          << out;
    }
  }
  const admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(c.collectives_served(), 2u * kIterations);
  EXPECT_EQ(c.collectives_failed(), 0u);
  EXPECT_EQ(c.bytes_local(), uint64_t{kIterations} * kRanks * kRanks * (kSmall + kLarge));
}

TEST(Containers, OneContainerForTheJobReadsInPlace) {
  TempDir dir;
  Daemon daemon(dir, {"--log-level", "debug"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  Layout layout = OneContainer(dir, daemon.socket());
  RunBlockingJob(dir, daemon, layout, /*in_place=*/true);
}

TEST(Containers, AContainerPerRankCopiesThroughSharedMemory) {
  TempDir dir;
  Daemon daemon(dir, {"--log-level", "debug"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  Layout layout = ContainerPerRank(dir, daemon.socket(), kRanks);
  RunBlockingJob(dir, daemon, layout, /*in_place=*/false);
}

// Alltoallv whose rows are too large to stage but fit the SSB once staged: found in different
// namespaces at the first call, the ranks go again with every row staged, and read nothing in
// place from then on.
TEST(Containers, AContainerPerRankServesAlltoallvStaged) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  Layout layout = ContainerPerRank(dir, daemon.socket(), kRanks);
  ASSERT_TRUE(AllReady(layout)) << Logs(layout);
  ScopedEnv single_copy("OHIO_SINGLE_COPY_BYTES", "32768");
  StageTimes on;
  constexpr uint32_t kCalls = 4;
  ContainedJob job(dir, "tests/tools/alltoallv_rank", "vector", kRanks, layout.in,
                   {"--calls", std::to_string(kCalls), "--every-bytes", std::to_string(kLarge)});
  ExpectAllPass(job, daemon.Log());
  for (uint32_t r = 0; r < kRanks; ++r) {
    const std::string out = job.rank(r).Output();
    EXPECT_TRUE(Contains(out, kSeparateNamespaces)) << out;
    for (const StageFields& f : StageLines(out)) EXPECT_EQ(f.at("read_peers_us"), 0.0) << out;
  }
  const admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(c.collectives_served(), kCalls);
  EXPECT_EQ(c.collectives_failed(), 0u);
  EXPECT_EQ(c.bytes_local(), uint64_t{kCalls} * kRanks * kRanks * kLarge);
}

// Across containers an alltoallv row larger than the rank's share of the SSB, which only
// reading in place could serve, is refused alike on every rank, saying why; the calls around it
// are served.
TEST(Containers, AContainerPerRankRefusesAnAlltoallvOnlyReadingInPlaceCouldServe) {
  TempDir dir;
  Daemon daemon(dir, {"--ssb-bytes", "1MiB"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  Layout layout = ContainerPerRank(dir, daemon.socket(), kRanks);
  ASSERT_TRUE(AllReady(layout)) << Logs(layout);
  ScopedEnv single_copy("OHIO_SINGLE_COPY_BYTES", "32768");
  // Calls 0, 1 and 3 of up to 64 KiB per pair; call 2 of up to 1 MB per pair, rows far beyond
  // a third of a 512 KiB SSB half.
  ContainedJob job(dir, "tests/tools/alltoallv_rank", "too-large", kRanks, layout.in,
                   {"--calls", "4", "--max-bytes", "65536", "--seed", "3", "--large-call", "2", "--large-bytes",
                    "1000000", "--large-expect", "not supported"});
  ExpectAllPass(job, daemon.Log());
  for (uint32_t r = 0; r < kRanks; ++r) {
    EXPECT_TRUE(Contains(job.rank(r).Output(), "call 2: code=11 (not supported) rank ")) << job.rank(r).Output();
    EXPECT_TRUE(Contains(job.rank(r).Output(), "may not have its memory read (ptrace restrictions, or the node's ranks "
                                               "in separate PID namespaces)"))
        << job.rank(r).Output();
  }
  const admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(c.collectives_served(), 3u);
}

// ohiod moves nonblocking calls through /proc/<host pid>/mem of ranks in other PID namespaces.
void RunNonblockingJob(const TempDir& dir, Daemon& daemon, Layout& layout) {
  ASSERT_TRUE(AllReady(layout)) << Logs(layout);
  ContainedJob job(dir, "tests/tools/ialltoall_rank", "nonblocking", kRanks, layout.in,
                   {"--batches", "2", "--outstanding", "3", "--bytes", "5000"});
  ExpectAllPass(job, daemon.Log());
  for (uint32_t r = 0; r < kRanks; ++r) {
    EXPECT_TRUE(Contains(job.rank(r).Output(), "ok moved_unaided=6 verified_bytes=90000")) << job.rank(r).Output();
  }
  // 6 calls moved by the daemon and the 2 blocking line-ups.
  const admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(c.collectives_served(), 8u);
  EXPECT_EQ(c.bytes_local(), 6u * 9 * 5000 + 2u * 9);
  EXPECT_EQ(c.collectives_failed(), 0u);
}

TEST(Containers, NonblockingCallsInOneContainer) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  Layout layout = OneContainer(dir, daemon.socket());
  RunNonblockingJob(dir, daemon, layout);
}

TEST(Containers, NonblockingCallsInAContainerPerRank) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  Layout layout = ContainerPerRank(dir, daemon.socket(), kRanks);
  RunNonblockingJob(dir, daemon, layout);
}

// The segment cache's /proc scan sees a process in a container that still maps a departed
// group's segment (a child its rank forked), by its host pid: the segment is not given to the
// next group.
TEST(Containers, TheSegmentCacheSeesAHolderInAContainer) {
  TempDir dir;
  Cluster cluster(dir, 2, {"--ssb-bytes", "1MiB", "--srb-bytes", "1MiB"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  Container node0(dir, "node0", cluster.node(0).socket());
  Container node1(dir, "node1", cluster.node(1).socket());
  ASSERT_TRUE(node0.ready() && node1.ready()) << node0.Log() << node1.Log();
  const std::vector<std::string> placement = {"--nodes", cluster.name(0), cluster.name(1), "--rank-node", "0", "1",
                                              "--bytes", "1", "4096", "--iterations", "3"};
  const auto in = [&](uint32_t r) { return r == 0 ? &node0 : &node1; };
  const std::string release = std::string(Container::kShared) + "/release-holder";
  ContainedJob held(dir, RankJob::kAlltoallRank, "held", 2, in, placement, [&](uint32_t r) {
    return r == 0 ? std::vector<std::string>{"--fork-holder", release} : std::vector<std::string>{};
  });
  ASSERT_TRUE(held.rank(0).WaitForOutput("holder ", kDeadline)) << held.Outputs();
  ExpectAllPass(held, cluster.Logs());
  // The holder, as the host numbers it: reparented to the container's init when the rank left,
  // it is the init's child whose pid inside is the one the rank printed.
  const std::string out = held.rank(0).Output();
  const pid_t holder_inside = std::stoi(out.substr(out.find("holder ") + 7));
  pid_t holder = -1;
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  while (holder < 0 && std::chrono::steady_clock::now() < end) {
    // The holder was reparented to the container's init when the rank left.
    std::ifstream children("/proc/" + std::to_string(node0.init_pid()) + "/task/" +
                           std::to_string(node0.init_pid()) + "/children");
    for (pid_t p; children >> p;) {
      if (PidInItsNamespace(p) == holder_inside) holder = p;
    }
    if (holder < 0) std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_GT(holder, 0) << "no process " << holder_inside << " in the container";
  ASSERT_NE(holder, holder_inside);
  ASSERT_GT(CountMappings(holder, "memfd:ohio-group"), 0) << "the holder does not map the segment";

  ContainedJob next(dir, RankJob::kAlltoallRank, "next", 2, in, placement);
  ExpectAllPass(next, cluster.Logs());
  const StatusQuery n0 = QueryStatus(cluster.node(0).admin_socket());
  ASSERT_TRUE(n0.ok) << n0.error;
  EXPECT_EQ(n0.reply.segment_cache().still_held(), 1u) << n0.reply.DebugString();
  EXPECT_EQ(n0.reply.segment_cache().hits(), 0u);
  EXPECT_TRUE(Contains(cluster.node(0).Log(), "is not reused: pid " + std::to_string(holder) + " maps it"))
      << cluster.node(0).Log();
  std::ofstream(dir.file("release-holder")) << "\n";
}

// A rank in its own PID namespace cannot see ohiod's process, so cannot tell a stopped daemon
// from a slow one: a leave it waits for still ends at the group's timeout, saying why it could
// not tell and what to change.
TEST(Containers, AStoppedDaemonIsReportedAsNotVisibleAndTheLeaveEndsAtTheTimeout) {
  constexpr int kTimeoutMs = 1500;
  TempDir dir;
  Daemon daemon(dir, {"--timeout-ms", std::to_string(kTimeoutMs)});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  Layout layout = OneContainer(dir, daemon.socket());
  ASSERT_TRUE(AllReady(layout)) << Logs(layout);
  ContainedJob job(dir, RankJob::kAlltoallRank, "stopped", kRanks, layout.in,
                   {"--bytes", "4096", "--iterations", "2", "--hold-after-first",
                    std::string(Container::kShared) + "/go", "--expect-leave", "timeout"});
  for (uint32_t r = 0; r < kRanks; ++r) ASSERT_TRUE(job.rank(r).WaitForOutput("holding", kDeadline)) << job.Outputs();
  StoppedForScope stopped(daemon.pid());
  ASSERT_TRUE(stopped.stopped());
  std::ofstream(dir.file("go")) << "go\n";
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int> codes = job.Wait(milliseconds(kTimeoutMs) + seconds(5));
  const auto took = std::chrono::steady_clock::now() - start;
  for (uint32_t r = 0; r < kRanks; ++r) {
    EXPECT_EQ(codes[r], 0) << job.Outputs();
    EXPECT_TRUE(Contains(job.rank(r).Output(), "leave error code=8 (timeout) ohiod did not answer leave within 1500 ms; "
                                               "whether ohiod is stopped cannot be told: its process is not visible "
                                               "in this rank's PID namespace"))
        << job.rank(r).Output();
  }
  EXPECT_GE(took, milliseconds(kTimeoutMs));
}

// A hostile user's process beside a job, in the job's container and in another, tries the job's
// ranks' and ohiod's memory and segments through /proc and the job's group key through ohiod:
// each is refused with the kernel's or ohiod's reason, and the job's bytes stay right.
TEST(Containers, AnotherUsersProcessReachesNeitherTheJobsMemoryNorItsSegmentNorItsGroup) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  Container shared(dir, "shared", daemon.socket());
  Container other(dir, "other", daemon.socket());
  ASSERT_TRUE(shared.ready() && other.ready()) << shared.Log() << other.Log();
  ContainedJob victim(dir, RankJob::kAlltoallRank, "victim", 2, [&](uint32_t) { return &shared; },
                      {"--bytes", "4096", "--iterations", "3", "--hold-after-first",
                       std::string(Container::kShared) + "/victim-go"});
  for (uint32_t r = 0; r < 2; ++r) ASSERT_TRUE(victim.rank(r).WaitForOutput("holding", kDeadline)) << victim.Outputs();
  std::vector<pid_t> host_pids, inside_pids;
  for (uint32_t r = 0; r < 2; ++r) {
    host_pids.push_back(victim.HostPid(r));
    inside_pids.push_back(PidInItsNamespace(host_pids.back()));
    ASSERT_GT(CountMappings(host_pids.back(), "memfd:ohio-group"), 0) << "rank " << r << " maps no segment";
  }
  const std::string on_host = ToolAnyoneCanRun(dir, "tests/tools/segment_intruder");
  const std::string inside = std::string(Container::kShared) + "/segment_intruder";
  const auto args = [&](const std::vector<pid_t>& pids, const std::string& intruder) {
    std::vector<std::string> a = {intruder};
    for (pid_t p : pids) a.insert(a.end(), {"--pid", std::to_string(p)});
    return a;
  };

  // In the job's container: the ranks are there to see, and the kernel refuses another user.
  auto beside = shared.Run(args(inside_pids, inside), dir.file("beside.out"), kIntruder);
  EXPECT_EQ(beside->Wait(kDeadline), 0) << beside->Output();
  for (pid_t p : inside_pids) {
    for (const char* way : {"mem", "readv", "fd", "map_files"}) {
      EXPECT_TRUE(Contains(beside->Output(), "pid " + std::to_string(p) + " " + way + ": refused (")) << beside->Output();
    }
    EXPECT_TRUE(Contains(beside->Output(), "pid " + std::to_string(p) + " mem: refused (Permission denied)"))
        << beside->Output();
    EXPECT_TRUE(Contains(beside->Output(), "pid " + std::to_string(p) + " readv: refused (Operation not permitted)"))
        << beside->Output();
  }
  // In another container: neither the ranks nor ohiod are there to name, by any number.
  std::vector<pid_t> elsewhere = host_pids;
  elsewhere.push_back(daemon.pid());
  auto apart = other.Run(args(elsewhere, inside), dir.file("apart.out"), kIntruder);
  EXPECT_EQ(apart->Wait(kDeadline), 0) << apart->Output();
  for (pid_t p : elsewhere) {
    EXPECT_TRUE(Contains(apart->Output(), "pid " + std::to_string(p) + " mem: refused (No such file or directory)"))
        << apart->Output();
    EXPECT_TRUE(Contains(apart->Output(), "pid " + std::to_string(p) + " readv: refused (No such process)"))
        << apart->Output();
  }
  // On the host, ohiod's own memory and descriptors (every group's segment) are root's.
  Process host(args({daemon.pid()}, on_host), dir.file("host.out"), kIntruder);
  EXPECT_EQ(host.Wait(kDeadline), 0) << host.Output();
  EXPECT_TRUE(Contains(host.Output(), "mem: refused (Permission denied)")) << host.Output();
  EXPECT_TRUE(Contains(host.Output(), "fd: refused (Permission denied)")) << host.Output();

  // Joining the job's group from the other container: ohiod knows the user by SO_PEERCRED.
  const std::string rank_tool = std::string(Container::kShared) + "/alltoall_rank";
  auto joiner = other.Run({rank_tool, "--socket", Container::kSocket, "--key", KeyHex("victim"), "--size", "2",
                           "--rank", "1", "--expect", "refused"},
                          dir.file("joiner.out"), kIntruder);
  EXPECT_EQ(joiner->Wait(kDeadline), 0) << joiner->Output();
  EXPECT_TRUE(Contains(joiner->Output(), "belongs to another user")) << joiner->Output();

  std::ofstream(dir.file("victim-go")) << "go\n";
  ExpectAllPass(victim, daemon.Log());
  for (uint32_t r = 0; r < 2; ++r) {
    EXPECT_TRUE(Contains(victim.rank(r).Output(), "ok bytes=4096 iterations=3")) << victim.rank(r).Output();
  }
  const admin::CountersReply c = QueryCounters(daemon.admin_socket());
  EXPECT_EQ(c.collectives_served(), 3u);
  EXPECT_EQ(c.collectives_failed(), 0u);
}

}  // namespace
}  // namespace ohio::testing
