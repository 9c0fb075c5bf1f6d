#include "client/ohio_plan/selection_report.h"

#include "shm/tables/selection_table_text.h"

namespace ohio {
namespace {

std::string Verdict(const SelectionTable& table, const Selection& s) {
  const std::string path = s.serve ? "ohio" : "the MPI library";
  if (s.rule < 0) return path + " (no row matches)";
  return path + " (row " + std::to_string(s.rule + 1) + ": " + FormatSelectionRule(table.rules[s.rule]) +
         (table.rules[s.rule].simulated ? "; a row ohio-sim simulated, not measured" : "") + ")";
}

// "1B", "512B", "4KiB": a sweep's sizes, each with its unit.
std::string SizeWithUnit(uint64_t bytes) {
  const std::string text = FormatTableBytes(bytes);
  return text.back() >= '0' && text.back() <= '9' ? text + "B" : text;
}

}  // namespace

std::string RenderSelection(const SelectionTable& table, const std::string& source, const SelectionShape& shape,
                            uint64_t bytes_per_pair) {
  std::string out = "selection table: " + source + ", digest " + SelectionTableDigest(table) + "\n";
  int row = 0;
  for (const SelectionRule& r : table.rules) out += "  " + std::to_string(++row) + ": " + FormatSelectionRule(r) + "\n";
  if (table.rules.empty()) out += "  (no rows: every call goes to the MPI library)\n";
  out += "shape: " + std::to_string(shape.nodes) + " node" + (shape.nodes == 1 ? "" : "s") + ", at most " +
         std::to_string(shape.ppn) + " rank" + (shape.ppn == 1 ? "" : "s") + " per node, transport " +
         SelectedTransportName(shape.transport) + "; " + FormatTableBytes(bytes_per_pair) + " per rank pair\n";
  for (uint32_t i = 0; i < kSelectedFunctionCount; ++i) {
    const auto f = static_cast<SelectedFunction>(i);
    std::string line = std::string("  ") + SelectedFunctionName(f);
    line.resize(14, ' ');
    const bool vector = f == SelectedFunction::kAlltoallv || f == SelectedFunction::kAlltoallw ||
                        f == SelectedFunction::kIalltoallv;
    if (f == SelectedFunction::kIalltoallv && !SelectionWhateverTheBytes(table, f, shape)) {
      // A rank cannot opt out of a nonblocking call alone (client/mpi/call_selection.h).
      line += "the MPI library, every call: the table's verdict depends on the bytes, which may differ between "
              "ranks";
    } else {
      line += Verdict(table, Select(table, f, shape, bytes_per_pair));
      if (vector) {
        line += SelectionWhateverTheBytes(table, f, shape)
                    ? "; whatever each rank's bytes"
                    : "; each rank decides by its own bytes, and one whose bytes go to the library takes every rank "
                      "there";
      }
    }
    out += line + "\n";
  }
  for (SelectedFunction f : {SelectedFunction::kAlltoall, SelectedFunction::kIalltoall}) {
    out += std::string(SelectedFunctionName(f)) + " by bytes per rank pair:";
    std::optional<bool> last;
    for (uint64_t m = 1; m <= (uint64_t{1} << 20); m *= 2) {
      const bool serve = Select(table, f, shape, m).serve;
      if (last && *last == serve) continue;
      out += std::string(last ? "," : "") + " from " + SizeWithUnit(m) + (serve ? " ohio" : " MPI library");
      last = serve;
    }
    out += "\n";
  }
  return out;
}

}  // namespace ohio
