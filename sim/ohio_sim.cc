// ohio-sim: predicts one alltoall's time through ohio on a SimGrid platform, for clusters this
// machine cannot hold, with the schedule ohio's own planners make (docs/SIMULATION.md).
//   ohio-sim run --platform P --nodes N --ppn K --bytes 1,4096 [...]   simulate, print the table
//   ohio-sim run ... --counts FILE|uniform:MAX:SEED|skewed:MAX:SEED     alltoallv instead
//   ohio-sim counts --ranks P --generate uniform:MAX:SEED --out FILE    write a count matrix
//   ohio-sim propose --nodes-list 64,128 --ppn K --bytes LIST ...       simulated table rows
//   ohio-sim calibrate --out FILE                                       measure this machine
#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "client/ohio_plan/plan_report.h"
#include "shm/tables/internode_table_text.h"
#include "shm/tables/selection_table_text.h"
#include "sim/calibrate.h"
#include "sim/count_matrix.h"
#include "sim/propose_runs.h"
#include "sim/sim_report.h"
#include "sim/table_proposal.h"
#include "sim/simulation.h"

namespace {

constexpr int kUsageError = 2;

int Fail(const std::string& message) {
  std::cerr << "ohio-sim: " << message << "\n";
  return kUsageError;
}

// "1,4096,65536": decimal byte counts.
ohio::Result<std::vector<uint64_t>> ParseSizes(const std::string& list) {
  std::vector<uint64_t> sizes;
  size_t at = 0;
  while (true) {
    const size_t comma = std::min(list.find(',', at), list.size());
    const std::string item = list.substr(at, comma - at);
    if (item.empty() || item.size() > 15 || item.find_first_not_of("0123456789") != std::string::npos) {
      return ohio::Status(ohio::Code::kInvalidArgument,
                          "--bytes '" + list + "': '" + item + "' is not a decimal byte count below 10^15");
    }
    sizes.push_back(std::stoull(item));
    if (comma == list.size()) break;
    at = comma + 1;
  }
  return sizes;
}

std::string ReadFile(const std::string& path, bool* ok) {
  std::ifstream in(path);
  *ok = static_cast<bool>(in);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
  // What a failed child simulation printed reaches the user before propose's own error.
  std::cout.setf(std::ios::unitbuf);
  CLI::App app{"ohio-sim: ohio's alltoall on a SimGrid platform, scheduled by ohio's own planners"};
  app.require_subcommand(1);

  CLI::App* run = app.add_subcommand("run", "simulate alltoalls and print the predicted time per call");
  std::string platform, calibration_path, design = "v3", ppn_list, bytes_list = "4096", internode = "table",
                                          internode_table_path;
  uint64_t max_slices = 0;
  uint32_t nodes = 0, ppn = 0, iterations = 5, direct_window = ohio::InterNodeTable().direct_window;
  uint64_t ssb = ohio::kDefaultSsbBytes, srb = ohio::kDefaultSrbBytes, min_slice = ohio::kDefaultMinSliceBytes;
  int64_t qp_entries = -1;
  double qp_penalty = -1;
  std::vector<std::string> cfg;
  bool json = false;
  run->add_option("--platform", platform, "SimGrid platform (XML); nodes run on its first hosts in natural name order")
      ->required();
  run->add_option("--calibration", calibration_path, "calibration file (docs/SIMULATION.md)")->required();
  run->add_option("--nodes", nodes, "nodes (with --ppn)");
  run->add_option("--ppn", ppn, "ranks per node (with --nodes)");
  run->add_option("--ppn-list", ppn_list, "ranks per node, node by node, e.g. 3,1,2 (instead of --nodes/--ppn)");
  run->add_option("--bytes", bytes_list, "M of each call series, bytes per rank pair, e.g. 1,4096,65536")
      ->capture_default_str();
  std::string counts_spec;
  run->add_option("--counts", counts_spec,
                  "simulate alltoallv with this count matrix instead of --bytes: a file (one row of bytes per rank, "
                  "docs/SIMULATION.md) or a generator uniform:MAX:SEED or skewed:MAX:SEED");
  run->add_option("--iterations", iterations, "calls per size (time: their median)")->capture_default_str();
  run->add_option("--max-slices", max_slices,
                  "simulate at most this many slices (>= 2) of a call staged in more, predicting the rest from the "
                  "last one; frames then count only what was simulated (0: every round)")
      ->capture_default_str();
  run->add_option("--design", design, "node-level design: v1, v2 or v3")->capture_default_str();
  run->add_option("--ssb-bytes", ssb, "every node's SSB (ohiod's ssb-bytes)")->capture_default_str();
  run->add_option("--srb-bytes", srb, "every node's SRB (ohiod's srb-bytes)")->capture_default_str();
  run->add_option("--min-slice-bytes", min_slice, "ohiod's min-slice-bytes")->capture_default_str();
  run->add_option("--internode", internode,
                  "inter-node algorithm: table (the built-in table or --internode-table's), pairwise, hypercube "
                  "or direct (forced, as OHIO_INTERNODE_ALGORITHM does)")
      ->capture_default_str();
  run->add_option("--internode-table", internode_table_path, "inter-node table file (ohiod's internode-table)");
  run->add_option("--direct-window", direct_window, "direct's most puts in flight per node (ohiod's direct-window)")
      ->capture_default_str();
  run->add_option("--qp-cache-entries", qp_entries,
                  "NIC queue-pair cache model: queue pairs each node's NIC caches, least recently used "
                  "evicted (0: off); overrides the calibration file's");
  run->add_option("--qp-miss-penalty", qp_penalty, "seconds added to each message, sent or received, whose queue pair missed the cache");
  run->add_option("--cfg", cfg, "SimGrid setting name:value, repeatable (e.g. network/model:CM02)");
  run->add_flag("--json", json, "print JSON instead of the table");

  CLI::App* counts_cmd = app.add_subcommand("counts", "write a generated alltoallv count matrix (for --counts, the "
                                                      "SMPI bench program and test ranks)");
  std::string generate, counts_out;
  uint32_t counts_ranks = 0;
  counts_cmd->add_option("--ranks", counts_ranks, "ranks of the group")->required();
  counts_cmd->add_option("--generate", generate, "uniform:MAX:SEED or skewed:MAX:SEED")->required();
  counts_cmd->add_option("--out", counts_out, "file to write")->required();

  CLI::App* propose = app.add_subcommand(
      "propose", "simulate each inter-node algorithm at node counts nobody measured and write table rows marked "
                 "simulated (and selection rows from sim/compare.sh's CSV)");
  std::string nodes_list, propose_bytes = "1,64,1024,16384,65536", internode_out, compare_csv, selection_out;
  uint32_t propose_ppn = 0;
  double win_ratio = 0.95;
  std::vector<std::string> propose_cfg;
  std::string propose_platform, propose_calibration;
  propose->add_option("--platform", propose_platform, "SimGrid platform (XML)")->required();
  propose->add_option("--calibration", propose_calibration, "calibration file")->required();
  propose->add_option("--nodes-list", nodes_list, "node counts to propose rows for, e.g. 64,128,256")->required();
  propose->add_option("--ppn", propose_ppn, "ranks per node")->required();
  propose->add_option("--bytes", propose_bytes, "M of the calls simulated, increasing")->capture_default_str();
  propose->add_option("--cfg", propose_cfg, "SimGrid setting name:value, repeatable");
  propose->add_option("--internode-out", internode_out, "inter-node table rows to write")->required();
  propose->add_option("--compare-csv", compare_csv,
                      "sim/compare.sh's alltoall.csv for one shape (--nodes-list's single N and --ppn): selection rows");
  propose->add_option("--selection-out", selection_out, "selection table rows to write (with --compare-csv)");
  propose->add_option("--win-ratio", win_ratio, "ohio's row where its time is at most this times SMPI's fastest")
      ->capture_default_str();

  CLI::App* calibrate = app.add_subcommand("calibrate", "measure this machine and write a calibration file");
  std::string out_path;
  ohio::sim::CalibrateOptions calibrate_options;
  std::string note;
  calibrate->add_option("--out", out_path, "file to write")->required();
  calibrate->add_option("--threads", calibrate_options.max_threads, "copy bandwidth with 1..this many threads (default: every core)");
  calibrate->add_option("--note", note, "a line to keep in the file (e.g. that the machine was loaded)");

  CLI11_PARSE(app, argc, argv);

  if (*calibrate) {
    ohio::sim::Calibration c = ohio::sim::MeasureCalibration(calibrate_options);
    if (!note.empty()) c.note = note + "\n" + c.note;
    std::ofstream out(out_path);
    out << ohio::sim::RenderCalibration(c);
    if (!out) return Fail(out_path + ": cannot write");
    std::cout << ohio::sim::RenderCalibration(c);
    return 0;
  }

  if (*counts_cmd) {
    if (counts_ranks == 0) return Fail("--ranks must be at least 1");
    auto m = ohio::sim::GenerateCountMatrix(generate, counts_ranks);
    if (!m.ok()) return Fail(m.status().message());
    std::ofstream out(counts_out);
    out << ohio::sim::RenderCountMatrix(m.value());
    if (!out) return Fail(counts_out + ": cannot write");
    return 0;
  }

  if (*propose) {
    auto node_counts = ParseSizes(nodes_list);
    if (!node_counts.ok()) return Fail("--nodes-list '" + nodes_list + "': expected node counts separated by commas, e.g. 64,128");
    if (propose_ppn == 0) return Fail("--ppn must be at least 1");
    if (compare_csv.empty() != selection_out.empty()) return Fail("give --compare-csv and --selection-out together");
    if (!compare_csv.empty() && node_counts.value().size() != 1) {
      return Fail("--compare-csv is one shape's: give one node count");
    }
    ohio::sim::ProposeRuns runs{"/proc/self/exe", propose_platform, propose_calibration, propose_cfg,
                                node_counts.value(), propose_ppn, propose_bytes};
    auto points = ohio::sim::SimulateEachInterNode(runs);
    if (!points.ok()) return Fail(points.status().message());
    const std::string internode_rows = ohio::FormatInterNodeTable(ohio::sim::ProposeInterNodeRows(points.value()));
    const std::string header = "# proposed by ohio-sim propose (simulated, not measured): platform " +
                               propose_platform + ", calibration " + propose_calibration + ", ppn " +
                               std::to_string(propose_ppn) + ", M " + propose_bytes + "\n";
    std::ofstream out(internode_out);
    out << header << internode_rows;
    if (!out) return Fail(internode_out + ": cannot write");
    std::cout << "inter-node rows (" << internode_out << "):\n" << internode_rows;
    if (!compare_csv.empty()) {
      bool ok = false;
      const std::string csv = ReadFile(compare_csv, &ok);
      if (!ok) return Fail(compare_csv + ": cannot read");
      auto rows = ohio::sim::ProposeSelectionRows(csv, compare_csv, static_cast<uint32_t>(node_counts.value()[0]),
                                                   propose_ppn, win_ratio);
      if (!rows.ok()) return Fail(rows.status().message());
      std::ofstream sel(selection_out);
      sel << "# proposed by ohio-sim propose from " << compare_csv << " (simulated, not measured)\n"
          << ohio::FormatSelectionTable(rows.value());
      if (!sel) return Fail(selection_out + ": cannot write");
      std::cout << "selection rows (" << selection_out << "):\n" << ohio::FormatSelectionTable(rows.value());
    }
    return 0;
  }

  ohio::sim::SimRequest req;
  req.platform = platform;
  req.cfg = cfg;
  req.iterations = iterations;
  req.max_slices = max_slices;
  if (!ppn_list.empty()) {
    if (nodes || ppn) return Fail("give either --ppn-list or --nodes and --ppn");
    auto parsed = ohio::ParsePpnList(ppn_list);
    if (!parsed.ok()) return Fail(parsed.status().message());
    req.ppn = parsed.value();
  } else {
    auto uniform = ohio::UniformPpn(nodes, ppn);
    if (!uniform.ok()) return Fail(uniform.status().message());
    req.ppn = uniform.value();
  }
  if (!counts_spec.empty()) {
    uint32_t ranks = 0;
    for (uint32_t p : req.ppn) ranks += p;
    auto m = ohio::sim::CountMatrixFrom(counts_spec, ranks);
    if (!m.ok()) return Fail(m.status().message());
    req.counts = std::make_shared<const ohio::sim::CountMatrix>(m.value());
  }
  auto sizes = ParseSizes(bytes_list);
  if (!sizes.ok()) return Fail(sizes.status().message());
  req.sizes = sizes.value();
  auto algo = ohio::ParseNodeLevelDesign(design);
  if (!algo) return Fail("--design '" + design + "': expected v1, v2 or v3");
  req.settings.algo = *algo;
  req.settings.ssb_bytes = ssb;
  req.settings.srb_bytes = srb;
  req.settings.min_slice_bytes = min_slice;
  if (!internode_table_path.empty()) {
    bool ok = false;
    const std::string text = ReadFile(internode_table_path, &ok);
    if (!ok) return Fail(internode_table_path + ": cannot read the inter-node table");
    auto table = ohio::ParseInterNodeTable(text, internode_table_path);
    if (!table.ok()) return Fail(table.status().message());
    req.settings.table = table.value();
  }
  if (internode != "table") {
    auto forced = ohio::ParseInterNodeAlgorithmName(internode);
    if (!forced) return Fail("--internode '" + internode + "': expected table, pairwise, hypercube or direct");
    req.settings.table = ohio::ForcedInterNodeTable(*forced);
  }
  req.settings.table.direct_window = direct_window;
  auto calibration = ohio::sim::ReadCalibration(calibration_path);
  if (!calibration.ok()) return Fail(calibration.status().message());
  req.calibration = calibration.value();
  req.qp_cache.entries = qp_entries >= 0 ? static_cast<uint64_t>(qp_entries) : req.calibration.qp_cache_entries;
  req.qp_cache.penalty = qp_penalty >= 0 ? qp_penalty : req.calibration.qp_miss_penalty;

  auto result = ohio::sim::RunSimulation(req);
  if (!result.ok()) return Fail(result.status().message());
  std::cout << (json ? ohio::sim::RenderSimJson(req, result.value()) : ohio::sim::RenderSimText(req, result.value()));
  return 0;
}
