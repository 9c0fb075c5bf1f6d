// Buffers sized by need (shm/plan/buffer_sizing.h, client/libohio/growing_group.h): a group joined with a
// hint maps what its calls need, grows by itself when a call outgrows it (every byte of every
// call verified meanwhile), shrinks to what fits the memory left rather than being refused, and
// its ranks must agree on the hint. Real daemons, real rank processes.
#include <unistd.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "client/libohio/control_connection.h"
#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/rank_job.h"

namespace ohio::testing {
namespace {

using std::chrono::seconds;

constexpr auto kDeadline = seconds(90);

bool Contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

// The 16 raw bytes of KeyHex(name).
std::string KeyBytes(const std::string& name) {
  const std::string hex = KeyHex(name);
  std::string key;
  for (size_t i = 0; i < hex.size(); i += 2) key += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return key;
}

// Waits until every rank of `job` has said it keeps its group after its calls.
void AwaitStalling(RankJob& job) {
  for (uint32_t r = 0; r < job.size(); ++r) {
    ASSERT_TRUE(job.rank(r).WaitForOutput("stalling", kDeadline)) << job.Outputs();
  }
}

admin::GroupSummary OnlyGroup(const Daemon& d) {
  const StatusQuery s = QueryStatus(d.admin_socket());
  EXPECT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.reply.groups(), 1u);
  EXPECT_EQ(s.reply.group_size(), 1);
  return s.reply.group_size() > 0 ? s.reply.group(0) : admin::GroupSummary();
}

TEST(SizedBuffers, TwoRanksExchangingSixtyFourBytesMapKilobytes) {
  TempDir dir;
  Daemon daemon(dir, {});  // default buffers: a 16 MiB SSB per group
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  RankJob job(dir, daemon.socket(), "small", 2, {"--hint", "64", "--bytes", "64", "--iterations", "20", "--stall-after"});
  AwaitStalling(job);
  const admin::GroupSummary g = OnlyGroup(daemon);
  EXPECT_EQ(g.bytes_per_rank_hint(), 64u);
  EXPECT_EQ(g.ssb_bytes(), 4096u);
  EXPECT_LE(g.segment_bytes(), 16u << 10) << "a 2-rank group of 64-byte calls maps " << g.segment_bytes();

  // Without a hint the same job gets the configured buffers.
  RankJob plain(dir, daemon.socket(), "plain", 2, {"--bytes", "64", "--iterations", "2", "--stall-after"});
  AwaitStalling(plain);
  const StatusQuery s = QueryStatus(daemon.admin_socket());
  ASSERT_TRUE(s.ok) << s.error;
  ASSERT_EQ(s.reply.group_size(), 2);
  uint64_t largest = 0;
  for (const auto& x : s.reply.group()) largest = std::max<uint64_t>(largest, x.ssb_bytes());
  EXPECT_EQ(largest, 16u << 20);
}

// Calls of 64 B, then 5000 B (outgrows 4 KiB), then 100000 B (outgrows 64 KiB), then 64 B
// again: every call verified by the rank tool, and the group ends with the configured sizes.
void GrowsThroughTheClasses(const std::vector<Daemon*>& daemons, RankJob& job) {
  AwaitStalling(job);
  for (Daemon* d : daemons) {
    const admin::GroupSummary g = OnlyGroup(*d);  // the outgrown groups were left
    EXPECT_EQ(g.bytes_per_rank_hint(), 0u);
    EXPECT_TRUE(Contains(d->Log(), "sized for calls of up to 4096 bytes per rank")) << d->Log();
    EXPECT_TRUE(Contains(d->Log(), "sized for calls of up to 65536 bytes per rank")) << d->Log();
    EXPECT_TRUE(Contains(d->Log(), "sized for the configured sizes")) << d->Log();
  }
}

const std::vector<std::string> kRisingCalls = {"--hint",   "4096",         "--bytes", "64",           "5000",
                                               "100000",   "64",           "--iterations", "3", "--stall-after"};

TEST(SizedBuffers, AGroupOnOneNodeGrowsWithItsCalls) {
  TempDir dir;
  Daemon daemon(dir, {});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  RankJob job(dir, daemon.socket(), "rising", 3, kRisingCalls);
  GrowsThroughTheClasses({&daemon}, job);
}

TEST(SizedBuffers, AGroupAcrossNodesGrowsWithItsCalls) {
  TempDir dir;
  Cluster cluster(dir, 2);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 2), "rising", kRisingCalls);
  GrowsThroughTheClasses({&cluster.node(0), &cluster.node(1)}, job);
}

// A uid at its user-max-groups still grows its groups: the outgrown generation, held until the
// first call on the next, is not counted (without that, one node refuses the re-join and the
// other waits for it until the timeout).
TEST(SizedBuffers, AGroupAtItsUidsGroupLimitStillGrows) {
  TempDir dir;
  Cluster cluster(dir, 2, {"--user-max-groups", "1"});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 2), "rising", kRisingCalls);
  GrowsThroughTheClasses({&cluster.node(0), &cluster.node(1)}, job);
}

// A raw join of a one-rank group `name` naming `replaces` (if any) as its outgrown predecessor,
// as a client that never leaves its outgrown groups would send it; the descriptors are closed.
Status JoinOneRankGroup(ControlConnection& connection, const std::string& name, const std::string& replaces,
                        uint64_t hint) {
  control::JoinGroup j;
  j.set_key(KeyBytes(name));
  j.set_size(1);
  j.set_rank(0);
  j.add_node_names(connection.node_name());
  j.add_rank_node(0);
  if (hint != 0) j.set_bytes_per_rank_hint(hint);
  if (!replaces.empty()) j.set_replaces_key(KeyBytes(replaces));
  auto joined = connection.Join(j);
  if (joined.ok()) {
    close(joined->segment_fd);
    close(joined->doorbell_fd);
  }
  return joined.status();
}

// The exemption cannot be used to hold more groups: a group is left out of the limits for one
// successor only, and not while its own predecessor is still held. Raw joins of one-rank
// groups, as a client that never leaves its outgrown groups would send them.
TEST(SizedBuffers, AnOutgrownGroupIsExemptOnceAndOneGenerationDeep) {
  TempDir dir;
  Daemon daemon(dir, {"--user-max-groups", "1"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  auto connected = ControlConnection::Connect(daemon.socket());
  ASSERT_TRUE(connected.ok()) << connected.status().message();
  ControlConnection& connection = *connected.value();
  auto join = [&](const std::string& name, const std::string& replaces) {
    return JoinOneRankGroup(connection, name, replaces, 64);
  };
  auto refused_at_the_limit = [](const Status& s, int held) {
    EXPECT_FALSE(s.ok());
    EXPECT_TRUE(Contains(s.message(), "already has " + std::to_string(held) + " groups on node")) << s.message();
    EXPECT_TRUE(Contains(s.message(), "user-max-groups = 1")) << s.message();
  };
  ASSERT_TRUE(join("g1", "").ok());
  refused_at_the_limit(join("other", ""), 1);
  ASSERT_TRUE(join("g2", "g1").ok()) << "g1's successor";
  refused_at_the_limit(join("g2b", "g1"), 2);  // g1 has its successor already
  refused_at_the_limit(join("g3", "g2"), 2);   // g2's predecessor g1 is still held
  ASSERT_TRUE(connection.Leave(KeyBytes("g1"), std::chrono::seconds(10)).ok());
  EXPECT_TRUE(join("g3", "g2").ok()) << "g1 is gone: g2 may have its successor";
  EXPECT_EQ(QueryStatus(daemon.admin_socket()).reply.groups(), 2u);
}

// Nor can it be used to hold more memory: the outgrown group's memory is counted, so a uid at
// its share cannot name its group as replaced to hold two (raw joins as root, a uid like any
// other here), and another uid still gets its share.
TEST(SizedBuffers, AnOutgrownGroupsMemoryIsCounted) {
  TempDir dir;
  // A group takes a 30 MiB SSB (and a page or two): one fits a uid's 32 MiB share, two do not.
  Daemon daemon(dir, {"--memory-limit", "64MiB", "--ssb-bytes", "30MiB"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  auto connected = ControlConnection::Connect(daemon.socket());
  ASSERT_TRUE(connected.ok()) << connected.status().message();
  ControlConnection& connection = *connected.value();
  auto join = [&](const std::string& name, const std::string& replaces) {
    return JoinOneRankGroup(connection, name, replaces, 0);
  };
  ASSERT_TRUE(join("big1", "").ok());
  const Status successor = join("big2", "big1");
  EXPECT_FALSE(successor.ok()) << "a successor past the uid's share";
  EXPECT_TRUE(Contains(successor.message(), "uid 0 already uses")) << successor.message();
  EXPECT_TRUE(Contains(successor.message(), "one uid may use 33554432")) << successor.message();
  // Another uid's group of the same size fits beside root's one.
  const std::string tool = RankToolAnyoneCanRun(dir);
  Process other({tool, "--socket", daemon.socket(), "--key", KeyHex("other"), "--size", "1", "--rank", "0", "--stall"},
                dir.file("other.out"), 65534);
  EXPECT_TRUE(other.WaitForOutput("joined", kDeadline)) << other.Output() << daemon.Log();
  EXPECT_EQ(QueryStatus(daemon.admin_socket()).reply.groups(), 2u);
}

TEST(SizedBuffers, AHintedGroupShrinksToTheMemoryLeft) {
  TempDir dir;
  // 4 ranks of 64 KiB calls want a 2 MiB SSB; 1.5 MiB is all there is.
  Daemon daemon(dir, {"--memory-limit", "1536KiB", "--user-memory-percent", "100"});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  RankJob job(dir, daemon.socket(), "tight", 4,
              {"--hint", "65536", "--bytes", "65536", "1000", "--iterations", "3", "--stall-after"});
  AwaitStalling(job);
  const admin::GroupSummary g = OnlyGroup(daemon);
  EXPECT_EQ(g.ssb_bytes(), 1u << 20);
  EXPECT_LE(g.segment_bytes(), 1536u << 10);
  // Without a hint the group asks for the configured 16 MiB and is refused.
  RankJob plain(dir, daemon.socket(), "plain", 1, {"--expect", "not enough shared memory"});
  for (int code : plain.Wait(kDeadline)) EXPECT_EQ(code, 0) << plain.Outputs();
}

TEST(SizedBuffers, RanksMustAgreeOnTheHint) {
  TempDir dir;
  Daemon daemon(dir, {});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  auto rank = [&](int r, const std::string& hint, const std::vector<std::string>& more) {
    std::vector<std::string> argv = {RunfilePath("tests/tools/alltoall_rank"), "--socket", daemon.socket(), "--key",
                                     KeyHex("mixed"), "--size", "2", "--rank", std::to_string(r), "--hint", hint};
    argv.insert(argv.end(), more.begin(), more.end());
    return std::make_unique<Process>(argv, dir.file("mixed" + std::to_string(r) + ".out"));
  };
  auto first = rank(0, "4096", {"--stall"});
  ASSERT_TRUE(first->WaitForOutput("joined", kDeadline)) << first->Output() << daemon.Log();
  auto second = rank(1, "65536", {"--expect", "refused"});
  EXPECT_EQ(second->Wait(kDeadline), 0) << second->Output();
  EXPECT_TRUE(Contains(second->Output(), "rank 1 asks for buffers sized for calls of up to 65536 bytes per rank but "
                                         "the group's are sized for calls of up to 4096 bytes per rank"))
      << second->Output();
}

}  // namespace
}  // namespace ohio::testing
