// Table rows ohio-sim proposes, marked `simulated`, from writing to every reader: ohio-sim
// propose writes inter-node rows from its own runs of each algorithm and selection rows from a
// compare.sh CSV; ohio-plan --explain and --select say when the deciding row is simulated; a real
// ohiod loads both files and ohioctl status counts their simulated rows; a bad marker is refused
// by ohio-plan and ohiod with the file and line. Small shapes (2 and 4 nodes of this box).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "shm/tables/internode_table_text.h"
#include "shm/tables/selection_table_text.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/process.h"
#include "tests/sim/sim_runner.h"

namespace ohio::testing {
namespace {

using std::chrono::seconds;

constexpr auto kDeadline = seconds(120);

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct ToolRun {
  int code = -1;
  std::string output;
};

ToolRun Tool(const TempDir& dir, const std::string& runfile, const std::vector<std::string>& args) {
  static int n = 0;
  std::vector<std::string> argv = {RunfilePath(runfile)};
  argv.insert(argv.end(), args.begin(), args.end());
  Process p(argv, dir.file("tool" + std::to_string(++n) + ".out"));
  ToolRun r;
  r.code = p.Wait(kDeadline);
  r.output = p.Output();
  return r;
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// What sim/compare.sh writes for one shape: ohio faster up to 4 KiB, slower beyond.
constexpr const char* kCompareCsv =
    "bytes,ohio_sim_us,smpi_ompi_us,ohio_over_ompi,smpi_pair_us,ohio_over_pair\n"
    "1,10.0,40.0,0.25,30.0,0.33\n"
    "4096,50.0,90.0,0.56,80.0,0.62\n"
    "65536,900.0,700.0,1.29,800.0,1.12\n";

TEST(SimTableRows, ProposedRowsReachOhioPlanOhiodAndOhioctl) {
  TempDir dir;
  const std::string internode = dir.file("internode.table");
  const std::string selection = dir.file("selection.table");
  const std::string csv = dir.file("alltoall.csv");
  std::ofstream(csv) << kCompareCsv;
  const SimRun proposed = RunOhioSimRaw({"propose", "--platform", ThisBoxPlatform(), "--calibration",
                                         ThisBoxCalibration(), "--nodes-list", "4", "--ppn", "1", "--bytes",
                                         "1,4096,65536", "--cfg", "network/model:CM02", "--internode-out", internode,
                                         "--compare-csv", csv, "--selection-out", selection},
                                        kDeadline);
  ASSERT_EQ(proposed.exit_code, 0) << proposed.output;

  // Every row ohio-sim wrote is marked, for exactly the node count it simulated, and the file
  // reads back as ohiod reads it.
  auto internode_rows = ParseInterNodeTable(Read(internode), internode);
  ASSERT_TRUE(internode_rows.ok()) << internode_rows.status().message() << "\n" << Read(internode);
  ASSERT_FALSE(internode_rows.value().rules.empty()) << Read(internode);
  for (const InterNodeRule& r : internode_rows.value().rules) {
    EXPECT_TRUE(r.simulated) << Read(internode);
    EXPECT_EQ(r.min_nodes, 4u);
    EXPECT_EQ(r.max_nodes, 4u);
  }
  // The last row reaches the largest M simulated: 64 KiB x 1 x 1.
  EXPECT_EQ(internode_rows.value().rules.back().max_block_bytes, 65536u) << Read(internode);
  auto selection_rows = ParseSelectionTable(Read(selection), selection);
  ASSERT_TRUE(selection_rows.ok()) << selection_rows.status().message();
  EXPECT_EQ(FormatSelectionTable(selection_rows.value()),
            "alltoall 4 1 any 1-4KiB ohio simulated\n"
            "alltoall 4 1 any any mpi simulated\n");

  // ohio-plan names the simulated row that decides.
  const ToolRun explain = Tool(dir, "client/ohio-plan",
                           {"--explain", "--internode-table", internode, "--nodes", "4", "--ppn", "1", "--bytes", "1"});
  ASSERT_EQ(explain.code, 0) << explain.output;
  const size_t chosen = explain.output.find("\nchosen: ");
  ASSERT_NE(chosen, std::string::npos) << explain.output;
  EXPECT_TRUE(Contains(explain.output.substr(chosen, explain.output.find('\n', chosen + 1) - chosen),
                       " simulated; a row ohio-sim simulated, not measured"))
      << explain.output;
  const ToolRun selected = Tool(dir, "client/ohio-plan",
                          {"--select", "--selection-table", selection, "--nodes", "4", "--ppn", "1", "--bytes", "64"});
  ASSERT_EQ(selected.code, 0) << selected.output;
  EXPECT_TRUE(Contains(selected.output,
                       "ohio (row 1: alltoall 4 1 any 1-4KiB ohio simulated; a row ohio-sim simulated, not measured)"))
      << selected.output;

  // A real ohiod loads both; ohioctl status says how many rows are simulated.
  Daemon daemon(dir, {"--internode-table", internode, "--selection-table", selection});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  const ToolRun status = Tool(dir, "client/ohioctl", {"--socket", daemon.admin_socket(), "status"});
  ASSERT_EQ(status.code, 0) << status.output;
  const std::string internode_rows_text = std::to_string(internode_rows.value().rules.size()) +
                                          (internode_rows.value().rules.size() == 1 ? " row" : " rows") + " simulated";
  EXPECT_TRUE(Contains(status.output, "selection.table (digest")) << status.output;
  EXPECT_TRUE(Contains(status.output, "for new groups; 2 rows simulated")) << status.output;
  EXPECT_TRUE(Contains(status.output, "internode.table (digest " + InterNodeTableDigest(internode_rows.value()) +
                                          "), for new groups; " + internode_rows_text))
      << status.output;
  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
}

TEST(SimTableRows, ABadMarkerIsRefusedWithFileAndLine) {
  TempDir dir;
  const std::string internode = dir.file("internode.table");
  std::ofstream(internode) << "# nodes max-block algorithm\n4+ 1KiB hypercube\n64 4KiB hypercube simulatd\n";
  const std::string why = "inter-node table " + internode +
                          ":3: expected 'simulated' after the 3 columns (the marker of a row ohio-sim proposed), got "
                          "'simulatd'";
  const ToolRun explain = Tool(dir, "client/ohio-plan",
                           {"--explain", "--internode-table", internode, "--nodes", "4", "--ppn", "1", "--bytes", "1"});
  EXPECT_NE(explain.code, 0);
  EXPECT_TRUE(Contains(explain.output, why)) << explain.output;
  Daemon daemon(dir, {"--internode-table", internode});
  EXPECT_FALSE(daemon.Start());
  EXPECT_TRUE(Contains(daemon.Log(), why)) << daemon.Log();

  const std::string selection = dir.file("selection.table");
  std::ofstream(selection) << "alltoall 64 32 any 1-4KiB ohio\nalltoall 64 32 any any mpi simulated?\n";
  const ToolRun selected = Tool(dir, "client/ohio-plan",
                          {"--select", "--selection-table", selection, "--nodes", "4", "--ppn", "1", "--bytes", "64"});
  EXPECT_NE(selected.code, 0);
  EXPECT_TRUE(Contains(selected.output, "selection table " + selection +
                                          ":2: expected 'simulated' after the 6 columns (the marker of a row "
                                          "ohio-sim proposed), got 'simulated?'"))
      << selected.output;
}

}  // namespace
}  // namespace ohio::testing
