// The registration cache (daemon/engine/segment_cache.h) with real daemons over tcp: a group spanning
// nodes that ends leaves its registered segment cached; the next group of the same uid and
// sizes takes it without registering anything, another uid never does, the least recently
// used is evicted to stay under registered-memory-limit and groups after an eviction work, a
// segment some process still maps is not reused until it is gone. Every step checked through
// the admin API: exact counters, and registered memory (in use plus cached) under the limit.
// Real rank processes check every received byte; ohioctl shows the cache.
#include <signal.h>

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/rank_job.h"

namespace ohio::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kDeadline = seconds(60);
constexpr uid_t kNobody = 65534;
// 1 MiB SSB and SRB: segments of about 2 MiB, so that two fit under the limit and three do not.
constexpr uint64_t kLimit = 5ull << 20;

std::vector<std::string> SmallSegments(uint64_t limit) {
  return {"--ssb-bytes", "1MiB", "--srb-bytes", "1MiB", "--registered-memory-limit", std::to_string(limit)};
}

bool Contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

void ExpectAllOk(RankJob& job, const std::string& context, Cluster& cluster) {
  bool all = true;
  for (int c : job.Wait(kDeadline)) all &= c == 0;
  EXPECT_TRUE(all) << context << "\n" << job.Outputs() << cluster.Logs();
}

// A job of `ppn` ranks on each of the two nodes, every byte checked, from uid `uid` if given.
std::unique_ptr<RankJob> Job(const TempDir& dir, Cluster& c, const std::string& name, uint32_t ppn,
                             std::optional<uid_t> uid = std::nullopt, std::vector<std::string> more = {},
                             std::function<std::vector<std::string>(uint32_t)> extra = nullptr) {
  std::vector<std::string> flags = {"--bytes", "1", "4096", "100000", "--iterations", "5"};
  flags.insert(flags.end(), more.begin(), more.end());
  return std::make_unique<RankJob>(dir, ControlSockets(c), NodeNames(c), ConsecutivePlacement(2, ppn), name, flags,
                                   extra, uid);
}

admin::StatusReply Status(Cluster& c, uint32_t i) {
  const StatusQuery q = QueryStatus(c.node(i).admin_socket());
  EXPECT_TRUE(q.ok) << c.name(i) << ": " << q.error;
  return q.reply;
}

// Polls node i until `ok` holds; the group of a job that just ended is released as soon as
// the daemon has read its ranks' goodbyes.
template <typename Pred>
bool WaitForStatus(Cluster& c, uint32_t i, Pred ok) {
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  while (std::chrono::steady_clock::now() < end) {
    const StatusQuery q = QueryStatus(c.node(i).admin_socket());
    if (q.ok && ok(q.reply)) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return false;
}

void WaitForCached(Cluster& c, uint32_t i, uint64_t segments) {
  EXPECT_TRUE(WaitForStatus(c, i, [&](const admin::StatusReply& s) {
    return s.groups() == 0 && s.segment_cache().cached_segments() == segments;
  })) << c.name(i) << " never held " << segments << " cached segments\n" << Status(c, i).DebugString();
}

void WaitForCached(Cluster& c, uint64_t segments) {
  for (uint32_t i = 0; i < c.size(); ++i) WaitForCached(c, i, segments);
}

struct Expected {
  uint64_t registrations, hits, misses, evictions;
};

// Exact counters on every node, and the bound: what the transport has registered is exactly
// the open groups' segments plus the cached ones, and stays under the limit.
void ExpectCounters(Cluster& c, const Expected& e, const std::string& step) {
  for (uint32_t i = 0; i < c.size(); ++i) {
    const admin::StatusReply s = Status(c, i);
    const admin::SegmentCacheCounters& cache = s.segment_cache();
    const admin::TransportCounters& t = s.transport_counters();
    EXPECT_EQ(t.registrations(), e.registrations) << step << ", " << c.name(i);
    EXPECT_EQ(cache.hits(), e.hits) << step << ", " << c.name(i);
    EXPECT_EQ(cache.misses(), e.misses) << step << ", " << c.name(i);
    EXPECT_EQ(cache.evictions(), e.evictions) << step << ", " << c.name(i);
    EXPECT_EQ(cache.still_held(), 0u) << step << ", " << c.name(i) << "\n" << c.node(i).Log();
    EXPECT_EQ(t.registered_bytes(), cache.in_use_bytes() + cache.cached_bytes()) << step << ", " << c.name(i);
    EXPECT_LE(t.registered_bytes(), kLimit) << step << ", " << c.name(i);
    EXPECT_EQ(cache.limit_bytes(), kLimit);
  }
}

std::string Ctl(const TempDir& dir, Cluster& c, const std::vector<std::string>& args) {
  static int n = 0;
  std::vector<std::string> argv = {RunfilePath("client/ohioctl"), "--socket", c.node(0).admin_socket()};
  argv.insert(argv.end(), args.begin(), args.end());
  Process p(argv, dir.file("ctl" + std::to_string(++n) + ".out"));
  EXPECT_EQ(p.Wait(seconds(30)), 0) << p.Output();
  return p.Output();
}

TEST(RegistrationCache, ReusedBySameUidAndSizesOnlyEvictedLeastRecentlyUsed) {
  TempDir dir;
  Cluster cluster(dir, 2, SmallSegments(kLimit));
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();

  // One group after another: a job of `ppn` ranks per node, every byte checked; then, once
  // it has ended, the segments cached and the counters on every node.
  auto step = [&](const std::string& name, uint32_t ppn, std::optional<uid_t> uid, uint64_t cached,
                  const Expected& expected) {
    auto job = Job(dir, cluster, name, ppn, uid);
    ExpectAllOk(*job, name, cluster);
    WaitForCached(cluster, cached);
    ExpectCounters(cluster, expected, "after group " + name);
  };
  step("first", 2, std::nullopt, 1, {1, 0, 1, 0});
  // Same uid, same sizes, another communicator: no registration at all.
  step("second", 2, std::nullopt, 1, {1, 1, 1, 0});
  // Another uid, same sizes: its own segment; both are cached afterwards (they fit).
  step("other-uid", 2, kNobody, 2, {2, 1, 2, 0});
  // Other sizes (one rank per node): no match, and its registration would pass the limit, so
  // the least recently used (the first uid's) is evicted before it registers.
  step("narrow", 1, std::nullopt, 2, {3, 1, 3, 1});
  // The first uid's sizes again, its segment evicted and nobody's not its own: a new one
  // (evicting nobody's), and it works.
  step("after-eviction", 2, std::nullopt, 2, {4, 1, 4, 2});

  const std::string status = Ctl(dir, cluster, {"status"});
  EXPECT_TRUE(Contains(status, "2 segments (4")) << status;
  EXPECT_TRUE(Contains(status, "cached; 1 reused, 4 missed, 2 evicted, 0 passed over")) << status;
  EXPECT_TRUE(Contains(status, "cached of 5.0 MiB")) << status;
  const std::string counters = Ctl(dir, cluster, {"counters", "--json"});
  EXPECT_TRUE(Contains(counters, "\"segment_cache\": {")) << counters;
  EXPECT_TRUE(Contains(counters, "\"hits\": 1,")) << counters;
  const std::string metrics = Ctl(dir, cluster, {"metrics"});
  EXPECT_TRUE(Contains(metrics, "\nohio_segment_cache_hits_total 1\n")) << metrics;
  EXPECT_TRUE(Contains(metrics, "\nohio_segment_cache_evictions_total 2\n")) << metrics;
  EXPECT_TRUE(Contains(metrics, "\nohio_segment_cache_segments 2\n")) << metrics;
  for (uint32_t i = 0; i < 2; ++i) EXPECT_EQ(cluster.node(i).Stop(), 0) << cluster.Logs();
}

// The case guarded against: a rank forks a process that outlives it with the segment still
// mapped. The next group must not be given that segment (the process could write into it);
// once the process is gone, it is reused.
TEST(RegistrationCache, NotReusedWhileAnotherProcessMapsTheSegment) {
  TempDir dir;
  Cluster cluster(dir, 2, SmallSegments(kLimit));
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::string release = dir.file("release-holder");
  auto held = Job(dir, cluster, "held", 2, std::nullopt, {}, [&](uint32_t r) {
    return r == 0 ? std::vector<std::string>{"--fork-holder", release} : std::vector<std::string>{};
  });
  ASSERT_TRUE(held->rank(0).WaitForOutput("holder ", kDeadline)) << held->Outputs();
  ExpectAllOk(*held, "the group whose rank leaves a holder", cluster);
  const std::string out = held->rank(0).Output();
  const pid_t holder = std::stoi(out.substr(out.find("holder ") + 7));
  ASSERT_GT(CountMappings(holder, "memfd:ohio-group"), 0) << "the holder does not map the segment";
  WaitForCached(cluster, 1);

  auto while_held = Job(dir, cluster, "while-held", 2);
  ExpectAllOk(*while_held, "a group while the holder lives", cluster);
  const admin::StatusReply n0 = Status(cluster, 0), n1 = Status(cluster, 1);
  EXPECT_EQ(n0.segment_cache().still_held(), 1u) << n0.DebugString();
  EXPECT_EQ(n0.segment_cache().hits(), 0u);
  EXPECT_EQ(n0.transport_counters().registrations(), 2u) << "node 0 did not register a segment of its own";
  // Node 1's ranks left nothing behind: it reuses.
  EXPECT_EQ(n1.segment_cache().still_held(), 0u);
  EXPECT_EQ(n1.segment_cache().hits(), 1u);
  EXPECT_EQ(n1.transport_counters().registrations(), 1u);
  EXPECT_TRUE(Contains(cluster.node(0).Log(), "is not reused: pid " + std::to_string(holder) + " maps it"))
      << cluster.node(0).Log();
  // Node 0 keeps both (the held one and the new one), node 1 the one it reused.
  WaitForCached(cluster, 0, 2);
  WaitForCached(cluster, 1, 1);

  std::ofstream(release).put('\n');
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  while (CountMappings(holder, "memfd:ohio-group") > 0 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_LE(CountMappings(holder, "memfd:ohio-group"), 0) << "the holder did not go";

  // Two groups at once take both cached segments, the one held before among them.
  auto again1 = Job(dir, cluster, "again1", 2, std::nullopt, {"--stall-after"});
  for (uint32_t r = 0; r < again1->size(); ++r) {
    ASSERT_TRUE(again1->rank(r).WaitForOutput("stalling", kDeadline)) << again1->Outputs() << cluster.Logs();
  }
  auto again2 = Job(dir, cluster, "again2", 2, std::nullopt, {"--stall-after"});
  for (uint32_t r = 0; r < again2->size(); ++r) {
    ASSERT_TRUE(again2->rank(r).WaitForOutput("stalling", kDeadline)) << again2->Outputs() << cluster.Logs();
  }
  const admin::StatusReply after = Status(cluster, 0);
  EXPECT_EQ(after.segment_cache().hits(), 2u) << after.DebugString();
  EXPECT_EQ(after.segment_cache().still_held(), 1u);
  EXPECT_EQ(after.transport_counters().registrations(), 2u);
  EXPECT_EQ(after.segment_cache().cached_segments(), 0u);
  EXPECT_EQ(after.transport_counters().registered_bytes(), after.segment_cache().in_use_bytes());
}

}  // namespace
}  // namespace ohio::testing
