// The selection table with real daemons and real ranks (libohio, no MPI): each rank gets the
// table its daemon holds (a `selection-table` file's rows in canonical form, else the built-in
// table) and the transport; the nodes of a group compare tables at setup, so a node whose rows
// differ fails the group on every node, while tables spelt differently with the same rows run;
// and SIGHUP gives new groups a new file's table while a group keeps the one it started with.
#include <signal.h>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "shm/tables/selection_table.h"
#include "shm/tables/selection_table_text.h"
#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/selection_tables.h"
#include "tests/harness/rank_job.h"
#include "tests/harness/wait_until.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(120);

bool Contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}


const admin::GroupSummary* FindGroup(const admin::StatusReply& reply, const std::string& key) {
  for (const auto& g : reply.group()) {
    if (g.key() == key) return &g;
  }
  return nullptr;
}

// Each rank writes the table it was handed to `<dir>/<name>-rank<r>.selection`.
std::function<std::vector<std::string>(uint32_t)> SelectionTo(const TempDir& dir, const std::string& name) {
  return [&dir, name](uint32_t r) {
    return std::vector<std::string>{"--selection-to", dir.file(name + "-rank" + std::to_string(r) + ".selection")};
  };
}
std::string HandedTo(const TempDir& dir, const std::string& name, uint32_t r) {
  return ReadFile(dir.file(name + "-rank" + std::to_string(r) + ".selection"));
}

constexpr char kCustomTable[] =
    "# measured on this cluster\n"
    "alltoall    2+   any  tcp  1-4KiB   ohio   # across nodes, small blocks\n"
    "ialltoall   any  any  any  4096+    ohio\n"
    "any         any  any  any  any      mpi\n";

TEST(SelectionTable, EachRankIsHandedItsDaemonsTableAndTransport) {
  TempDir dir;
  const std::string table = dir.file("selection.table");
  std::ofstream(table) << kCustomTable;
  Daemon custom(dir, {"--selection-table", table}, "custom");
  Daemon builtin(dir, {}, "builtin");
  ASSERT_TRUE(custom.Start()) << custom.Log();
  ASSERT_TRUE(builtin.Start()) << builtin.Log();

  RankJob from_file(dir, custom.socket(), "from-file", 2, {"--bytes", "64"}, SelectionTo(dir, "from-file"));
  RankJob from_builtin(dir, builtin.socket(), "from-builtin", 2, {"--bytes", "64"}, SelectionTo(dir, "from-builtin"));
  const std::vector<int> file_codes = from_file.Wait(kDeadline);
  const std::vector<int> builtin_codes = from_builtin.Wait(kDeadline);
  for (uint32_t r = 0; r < 2; ++r) {
    EXPECT_EQ(file_codes[r], 0) << from_file.Outputs() << custom.Log();
    EXPECT_TRUE(Contains(from_file.rank(r).Output(), "rank " + std::to_string(r) + ": selection transport=tcp"))
        << from_file.Outputs();
    EXPECT_EQ(HandedTo(dir, "from-file", r),
              "alltoall 2+ any tcp 1-4KiB ohio\nialltoall any any any 4KiB+ ohio\nany any any any any mpi\n");
    EXPECT_EQ(builtin_codes[r], 0) << from_builtin.Outputs() << builtin.Log();
    EXPECT_TRUE(Contains(from_builtin.rank(r).Output(), "rank " + std::to_string(r) + ": selection transport=tcp"))
        << from_builtin.Outputs();
    EXPECT_EQ(HandedTo(dir, "from-builtin", r), FormatSelectionTable(DefaultSelectionTable()));
  }

  StatusQuery q = QueryStatus(custom.admin_socket());
  ASSERT_TRUE(q.ok) << q.error;
  EXPECT_EQ(q.reply.selection_table(), "selection-table " + table);
  EXPECT_EQ(q.reply.selection_table_digest(), SelectionTableDigestOf(kCustomTable));
  q = QueryStatus(builtin.admin_socket());
  ASSERT_TRUE(q.ok) << q.error;
  EXPECT_EQ(q.reply.selection_table(), "the built-in table");
  EXPECT_EQ(q.reply.selection_table_digest(), SelectionTableDigest(DefaultSelectionTable()));
  EXPECT_EQ(custom.Stop(), 0) << custom.Log();
  EXPECT_EQ(builtin.Stop(), 0) << builtin.Log();
}

TEST(SelectionTable, ADaemonWhoseTableCannotBeReadDoesNotStart) {
  TempDir dir;
  const std::string table = dir.file("selection.table");
  std::ofstream(table) << "alltoall 2+ any tcp 1-4KiB ohio\nalltoall 1 any tcp any maybe\n";
  Daemon bad(dir, {"--selection-table", table}, "bad");
  EXPECT_FALSE(bad.Start());
  EXPECT_TRUE(Contains(bad.Log(), "ohiod: selection table " + table +
                                      ":2: unknown path 'maybe' (ohio: served through ohio; mpi: handed to the MPI "
                                      "library)"))
      << bad.Log();
  Daemon missing(dir, {"--selection-table", dir.file("absent.table")}, "missing");
  EXPECT_FALSE(missing.Start());
  EXPECT_TRUE(Contains(missing.Log(), "ohiod: cannot read selection table " + dir.file("absent.table"))) << missing.Log();
}

// n0 runs the built-in table, n1 a file of its own: the group fails on both nodes, and every
// rank is told which node holds which table.
TEST(SelectionAgreement, ANodeWithOtherRowsFailsTheGroupOnEveryNode) {
  TempDir dir;
  const std::string table = dir.file("n1-selection.table");
  std::ofstream(table) << kCustomTable;
  Cluster cluster(dir, 2);
  cluster.AddFlags(1, {"--selection-table", table});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();

  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 2), "differ",
              {"--bytes", "8", "--expect", "group failed"}, SelectionTo(dir, "differ"));
  const std::string why = "the nodes of group " + KeyHex("differ") +
                          " decide differently which calls ohio serves, node n0 by the built-in table (digest " +
                          SelectionTableDigest(DefaultSelectionTable()) + "), node n1 by selection-table " + table +
                          " (digest " + SelectionTableDigestOf(kCustomTable) +
                          "): every node of a group needs the same selection-table rows (spelling and comments aside)";
  const std::vector<int> codes = job.Wait(kDeadline);
  for (uint32_t r = 0; r < job.size(); ++r) {
    const std::string out = job.rank(r).Output();
    EXPECT_EQ(codes[r], 0) << out << cluster.Logs();
    // Either node may find the difference first; a rank is told by ohio_group_selection, or at
    // its join when its node had failed the group already.
    EXPECT_TRUE(Contains(out, "selection error code=7 (group failed)") || Contains(out, "join error code=7"))
        << "rank " << r << ": " << out;
    EXPECT_TRUE(ToldGroupFailed(out, KeyHex("differ"), why, NodeNames(cluster))) << "rank " << r << ": " << out;
  }
  for (uint32_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(WaitUntil(
        [&] {
          StatusQuery q = QueryStatus(cluster.node(i).admin_socket());
          return q.ok && q.reply.collectives_served() == 0 && FindGroup(q.reply, KeyHex("differ")) == nullptr;
        },
        std::chrono::seconds(10)))
        << cluster.name(i) << ": " << QueryStatus(cluster.node(i).admin_socket()).reply.DebugString();
  }
}

// The same rows spelt otherwise on each node (units, spacing, comments): one digest, the group
// runs, and every rank on both nodes is handed the same canonical text.
TEST(SelectionAgreement, TheSameRowsSpeltOtherwiseAgree) {
  TempDir dir;
  const std::string t0 = dir.file("n0-selection.table"), t1 = dir.file("n1-selection.table");
  std::ofstream(t0) << kCustomTable;
  std::ofstream(t1) << "alltoall 2+ any tcp 1B-4096B ohio\n\n  # nonblocking\nialltoall any any any 4KiB+ ohio\n"
                       "any any any any any mpi # the rest\n";
  Cluster cluster(dir, 2);
  cluster.AddFlags(0, {"--selection-table", t0});
  cluster.AddFlags(1, {"--selection-table", t1});
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();

  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 2), "agree",
              {"--bytes", "1", "4096", "--iterations", "3", "--stall-after"}, SelectionTo(dir, "agree"));
  for (uint32_t r = 0; r < job.size(); ++r) {
    ASSERT_TRUE(job.rank(r).WaitForOutput("stalling", kDeadline)) << job.Outputs() << cluster.Logs();
    EXPECT_TRUE(Contains(job.rank(r).Output(), "selection transport=tcp")) << job.rank(r).Output();
    EXPECT_TRUE(Contains(job.rank(r).Output(), "ok bytes=4096 iterations=3")) << job.rank(r).Output();
    EXPECT_EQ(HandedTo(dir, "agree", r), CanonicalSelectionTable(kCustomTable)) << "rank " << r;
  }
  for (uint32_t i = 0; i < 2; ++i) {
    StatusQuery q = QueryStatus(cluster.node(i).admin_socket());
    ASSERT_TRUE(q.ok) << q.error;
    const admin::GroupSummary* g = FindGroup(q.reply, KeyHex("agree"));
    ASSERT_NE(g, nullptr) << q.reply.DebugString();
    EXPECT_EQ(g->state(), "open");
    EXPECT_EQ(g->selection(), "selection-table " + (i == 0 ? t0 : t1));
    EXPECT_EQ(g->selection_digest(), SelectionTableDigestOf(kCustomTable));
  }
}

// SIGHUP reads the file again: a group created afterwards gets the new table, while a group
// created before keeps its own, even for a rank that joins it after the reload. A file that
// no longer parses keeps the table in force.
TEST(SelectionTable, SighupGivesNewGroupsTheNewTableAndOpenGroupsKeepTheirs) {
  TempDir dir;
  const std::string table = dir.file("selection.table");
  std::ofstream(table) << kCustomTable;
  Daemon daemon(dir, {"--selection-table", table});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();

  auto rank = [&](const std::string& key, uint32_t r) {
    const std::string out = dir.file(key + "-rank" + std::to_string(r));
    return std::make_unique<Process>(
        std::vector<std::string>{RunfilePath(RankJob::kAlltoallRank), "--socket", daemon.socket(), "--key", KeyHex(key),
                                 "--size", "2", "--rank", std::to_string(r), "--bytes", "64", "--selection-to",
                                 out + ".selection", "--stall-after"},
        out + ".out");
  };
  // Rank 0 of the older group joins before the reload (its group is created then).
  auto older0 = rank("older", 0);
  ASSERT_TRUE(older0->WaitForOutput("selection transport=tcp", kDeadline)) << older0->Output() << daemon.Log();

  const std::string next = "alltoall any any any any ohio\n";
  ASSERT_TRUE(ReloadSelectionTable(daemon, table, next)) << daemon.Log();
  EXPECT_TRUE(Contains(daemon.Log(), "SIGHUP: selection-table = " + table + " (table " + SelectionTableDigestOf(next) + ") (was " +
                                         table + " (table " + SelectionTableDigestOf(kCustomTable) +
                                         ")); open groups keep theirs, new groups get it"))
      << daemon.Log();

  // Its rank 1 joins after the reload: the group's table, not the new one.
  auto older1 = rank("older", 1);
  auto newer0 = rank("newer", 0);
  auto newer1 = rank("newer", 1);
  for (Process* p : {older0.get(), older1.get(), newer0.get(), newer1.get()}) {
    ASSERT_TRUE(p->WaitForOutput("stalling", kDeadline)) << p->Output() << daemon.Log();
  }
  for (uint32_t r = 0; r < 2; ++r) {
    EXPECT_EQ(ReadFile(dir.file("older-rank" + std::to_string(r) + ".selection")), CanonicalSelectionTable(kCustomTable)) << r;
    EXPECT_EQ(ReadFile(dir.file("newer-rank" + std::to_string(r) + ".selection")), CanonicalSelectionTable(next)) << r;
  }
  StatusQuery q = QueryStatus(daemon.admin_socket());
  ASSERT_TRUE(q.ok) << q.error;
  const admin::GroupSummary* older = FindGroup(q.reply, KeyHex("older"));
  const admin::GroupSummary* newer = FindGroup(q.reply, KeyHex("newer"));
  ASSERT_TRUE(older != nullptr && newer != nullptr) << q.reply.DebugString();
  EXPECT_EQ(older->selection_digest(), SelectionTableDigestOf(kCustomTable));
  EXPECT_EQ(newer->selection_digest(), SelectionTableDigestOf(next));
  EXPECT_EQ(older->sequence(), 1u);
  EXPECT_EQ(newer->sequence(), 1u);

  // A file that no longer parses: the reload fails, says where, and the table stays.
  std::ofstream(table) << "alltoall any any any any perhaps\n";
  ASSERT_EQ(kill(daemon.pid(), SIGHUP), 0);
  ASSERT_TRUE(WaitUntil(
      [&] {
        StatusQuery s = QueryStatus(daemon.admin_socket());
        return s.ok && s.reply.last_reload().rfind("reload failed", 0) == 0;
      },
      std::chrono::seconds(10)))
      << daemon.Log();
  q = QueryStatus(daemon.admin_socket());
  EXPECT_TRUE(Contains(q.reply.last_reload(), "selection table " + table + ":1: unknown path 'perhaps'"))
      << q.reply.last_reload();
  EXPECT_EQ(q.reply.selection_table_digest(), SelectionTableDigestOf(next));
  EXPECT_TRUE(Contains(daemon.Log(), "SIGHUP: cannot reload: ohiod: selection table " + table + ":1:")) << daemon.Log();
  auto after0 = rank("after-bad", 0);
  auto after1 = rank("after-bad", 1);
  for (Process* p : {after0.get(), after1.get()}) {
    ASSERT_TRUE(p->WaitForOutput("stalling", kDeadline)) << p->Output() << daemon.Log();
  }
  EXPECT_EQ(ReadFile(dir.file("after-bad-rank0.selection")), CanonicalSelectionTable(next));
}

}  // namespace
}  // namespace ohio::testing
