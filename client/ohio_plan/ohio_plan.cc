// ohio-plan: what an alltoall would cost each node (connections, posted sends, SSB/SRB bytes,
// rounds, bytes on the wire) under v1, v2, v3 or flat, planned exactly as ohiod plans it,
// without a daemon, a network or the memory of the cluster being planned for.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>

#include "client/ohio_plan/internode_report.h"
#include "client/ohio_plan/plan_report.h"
#include "client/ohio_plan/queue_pair_report.h"
#include "client/ohio_plan/selection_report.h"
#include "daemon/transport/verbs/queue_pair_budget.h"
#include "shm/plan/node_level_design.h"
#include "shm/tables/internode_table_text.h"
#include "shm/tables/selection_table_text.h"

namespace {

// Bad flags and plans the daemon would refuse share one exit code, so scripts tell "cannot
// plan this" (2) from a crash.
constexpr int kUsageError = 2;

// CLI11 reads numbers with strtoull(base 0): "-1" would wrap to 2^64-1 and "010" be octal.
// Runs before the size transform, so "1MiB" keeps its unit.
CLI::Validator Decimal(bool unit_allowed) {
  return CLI::Validator(
      [unit_allowed](std::string& s) -> std::string {
        const size_t end = std::min(s.find_first_not_of("0123456789"), s.size());
        if (end == 0 || (!unit_allowed && end != s.size())) return "'" + s + "' is not a non-negative decimal number";
        const size_t first = std::min(s.find_first_not_of('0'), end - 1);
        const std::string digits = s.substr(first, end - first);
        if (digits.size() > 20 || (digits.size() == 20 && digits > "18446744073709551615")) {
          return "'" + s + "' does not fit in 64 bits";
        }
        s = digits + s.substr(end);
        return "";
      },
      "", "decimal");
}

// A size flag ("4096", "1MiB"): decimal digits, then the unit.
template <typename T>
CLI::Option* AddSizeOption(CLI::App& app, const std::string& name, T& value, const std::string& help) {
  return app.add_option(name, value, help)->transform(CLI::AsSizeValue(false))->transform(Decimal(true));
}

int Fail(const std::string& message) {
  std::cerr << "ohio-plan: " << message << "\n";
  return kUsageError;
}

int Print(const std::string& out) {
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : Fail("cannot write the plan to stdout");
}

// A table file's text, or nullopt when it cannot be read.
std::optional<std::string> ReadTableFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int Explain(const std::vector<uint32_t>& ppn, uint64_t bytes, const std::string& table_file,
            const ohio::InterNodeBuffers& buffers) {
  ohio::InterNodeTable table = ohio::DefaultInterNodeTable();
  std::string source = "the built-in table";
  if (!table_file.empty()) {
    std::optional<std::string> text = ReadTableFile(table_file);
    if (!text) return Fail("cannot read inter-node table " + table_file);
    auto parsed = ohio::ParseInterNodeTable(*text, table_file);
    if (!parsed.ok()) return Fail(parsed.status().message());
    table = std::move(parsed).value();
    source = "the table " + table_file;
  }
  auto explained = ohio::ExplainInterNodeAlgorithm(table, ppn, bytes, buffers);
  if (!explained.ok()) return Fail(explained.status().message());
  return Print(ohio::RenderInterNodeExplanation(table, source, explained.value()));
}

int Select(const std::vector<uint32_t>& ppn, uint64_t bytes, const std::string& table_file,
           const std::string& transport) {
  ohio::SelectionTable table = ohio::DefaultSelectionTable();
  std::string source = "the built-in table";
  if (!table_file.empty()) {
    std::optional<std::string> text = ReadTableFile(table_file);
    if (!text) return Fail("cannot read selection table " + table_file);
    auto parsed = ohio::ParseSelectionTable(*text, table_file);
    if (!parsed.ok()) return Fail(parsed.status().message());
    table = std::move(parsed).value();
    source = "the table " + table_file;
  }
  ohio::SelectionShape shape;
  shape.nodes = static_cast<uint32_t>(ppn.size());
  shape.ppn = *std::max_element(ppn.begin(), ppn.end());
  shape.transport = *ohio::ParseSelectedTransport(transport);
  return Print(ohio::RenderSelection(table, source, shape, bytes));
}

int QueuePairs(bool nodes_given, uint64_t nodes, uint64_t rails, const std::string& rc_pool) {
  if (!nodes_given || nodes < 1 || nodes > (1u << 20)) return Fail("--queue-pairs needs --nodes from 1 to 1048576");
  if (rails < 1 || rails > 64) return Fail("--rails must be from 1 to 64, not " + std::to_string(rails));
  uint32_t pool = 0;
  if (rc_pool == "unlimited") {
    pool = ohio::kRcPoolUnlimited;
  } else {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(rc_pool.c_str(), &end, 10);
    if (rc_pool.empty() || *end != '\0' || rc_pool[0] == '-' || n >= ohio::kRcPoolUnlimited) {
      return Fail("--rc-pool is a number of queue pairs or 'unlimited', not '" + rc_pool + "'");
    }
    pool = static_cast<uint32_t>(n);
  }
  return Print(ohio::RenderQueuePairs(static_cast<uint32_t>(nodes), static_cast<uint32_t>(rails), pool));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "Dry-run planner: per-node connections, posted sends, SSB/SRB bytes, staging rounds and bytes on the wire "
      "of one alltoall, computed by the same planners ohiod runs. Ranks are placed consecutively, node by node.",
      "ohio-plan");
  uint64_t nodes = 0, ppn = 0, bytes = 0, ssb = 0, srb = 0, min_slice = ohio::kDefaultMinSliceBytes;
  std::string algo, ppn_list, internode_table, selection_table, transport = "tcp";
  bool json = false, per_node = false, explain = false, select = false;
  auto* nodes_opt = app.add_option("--nodes", nodes, "Nodes N in the group")->transform(Decimal(false));
  auto* ppn_opt = app.add_option("--ppn", ppn, "Ranks per node (the same on every node)")->transform(Decimal(false));
  auto* list_opt = app.add_option("--ppn-list", ppn_list,
                                  "Ranks per node, node by node, e.g. 3,1,2 (uneven groups; overrides --nodes/--ppn)");
  auto* bytes_opt =
      AddSizeOption(app, "--bytes", bytes, "M: bytes every rank sends to every rank (e.g. 4096, 1MiB); required but "
                                           "with --queue-pairs");
  app.add_option("--design,--algo", algo,
                 "v1 (SSB as the ranks' buffers), v2 (coalesced per node), v3 (v2 with a two-half SRB), "
                 "flat (every rank to every rank on the other nodes, no daemon); with --explain v1, v2 or v3, default v3")
      ->check(CLI::IsMember({"v1", "v2", "v3", "flat"}));
  auto* ssb_opt = AddSizeOption(app, "--ssb-bytes", ssb,
                                "Bound the SSB per group and node as ohiod's ssb_bytes does (default ohiod: 16MiB); "
                                "larger alltoalls are staged in rounds. Default here: unbounded (one round); with "
                                "--explain ohiod's default");
  auto* srb_opt = AddSizeOption(app, "--srb-bytes", srb,
                                "Bound the SRB per group and node as ohiod's srb_bytes does (default ohiod: 8MiB); "
                                "v3 then sends blocks larger than half of it in chunks. Default here: what the "
                                "algorithm needs for one unchunked round; with --explain ohiod's default");
  AddSizeOption(app, "--min-slice-bytes", min_slice,
                "Shortest slice of a message a staged round copies, as ohiod plans (default 4KiB); rounds then "
                "carry fewer ranks' messages or reach fewer nodes. 0: every round carries a slice of every message, "
                "however short");
  auto* json_opt =
      app.add_flag("--json", json, "Print JSON: group, per_node figures and their maxima over the nodes");
  app.add_flag("--explain", explain,
               "Instead of the plan: the inter-node table, which inter-node algorithm among nodes (pairwise, hypercube, "
               "direct) it chooses for this group and M and by which row (pairwise where the table's hypercube does "
               "not fit the round with --algo, --ssb-bytes and --srb-bytes, as in ohiod), what each would cost a "
               "node per call, and a sweep of M")
      ->excludes(json_opt);
  app.add_option("--internode-table", internode_table,
                 "With --explain: the table file ohiod's internode-table names (default: the built-in table)");
  app.add_flag("--select", select,
               "Instead of the plan: the selection table, whether each MPI function's call of this shape and M is "
               "served through ohio or handed to the MPI library and by which row, and where the verdict changes "
               "with M")
      ->excludes(json_opt);
  app.add_option("--selection-table", selection_table,
                 "With --select: the table file ohiod's selection-table names, e.g. one deploy/measure-selection.sh "
                 "wrote (default: the built-in table)");
  app.add_option("--transport", transport, "With --select: the daemons' transport among nodes, tcp or verbs (default tcp)")
      ->check(CLI::IsMember({"tcp", "verbs"}));
  app.add_flag("--per-node", per_node, "Text: one row per node instead of folding equal nodes into ranges");
  bool queue_pairs = false;
  uint64_t rails = 1;
  std::string rc_pool = "256";
  app.add_flag("--queue-pairs", queue_pairs,
               "Instead of the plan: the verbs transport's queue pairs per node for --nodes N (up to 2^20; no --ppn "
               "or --bytes needed) and the memory of their queues and buffers, with one RC queue pair per peer and "
               "with the RC pool bounded (the other peers on one UD queue pair per rail)")
      ->excludes(json_opt);
  app.add_option("--rails", rails, "With --queue-pairs: active HCA ports per node (default 1)")
      ->transform(Decimal(false));
  app.add_option("--rc-pool", rc_pool, "With --queue-pairs: RC queue pairs per rail in the pool (default 256)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kUsageError;
  }

  if (queue_pairs) return QueuePairs(nodes_opt->count() > 0, nodes, rails, rc_pool);
  if (!*bytes_opt) return Fail("--bytes is required; run with --help for more information");
  ohio::Result<std::vector<uint32_t>> counts = std::vector<uint32_t>{};
  if (*list_opt) {
    counts = ohio::ParsePpnList(ppn_list);
  } else if (*nodes_opt && *ppn_opt) {
    counts = ohio::UniformPpn(nodes, ppn);
  } else {
    return Fail("give --nodes and --ppn, or --ppn-list; run with --help for more information");
  }
  if (!counts.ok()) return Fail(counts.status().message());
  if (select && explain) return Fail("--select and --explain are two reports: ask for one");
  if (select) return Select(counts.value(), bytes, selection_table, transport);
  if (explain) {
    ohio::InterNodeBuffers buffers;
    if (!algo.empty()) {
      const std::optional<ohio::NodeLevelDesign> a = ohio::ParseNodeLevelDesign(algo);
      if (!a) return Fail("--explain plans the daemons' inter-node algorithm: --algo v1, v2 or v3, not " + algo);
      buffers.algo = *a;
    }
    if (*ssb_opt) buffers.ssb_bytes = ssb;
    if (*srb_opt) buffers.srb_bytes = srb;
    return Explain(counts.value(), bytes, internode_table, buffers);
  }
  if (algo.empty()) return Fail("--algo is required; run with --help for more information");

  ohio::PlanRequest request;
  request.ppn = counts.value();
  request.bytes_per_rank = bytes;
  request.design = *ohio::ParseDesign(algo);
  if (*ssb_opt) request.ssb_bytes = ssb;
  if (*srb_opt) request.srb_bytes = srb;
  request.min_slice_bytes = min_slice;
  ohio::Result<ohio::PlanReport> report = ohio::MakePlanReport(request);
  if (!report.ok()) return Fail(report.status().message());
  return Print(json ? ohio::RenderJson(report.value()) : ohio::RenderText(report.value(), per_node));
}
