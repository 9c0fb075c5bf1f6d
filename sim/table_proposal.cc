#include "sim/table_proposal.h"

#include <algorithm>
#include <map>
#include <sstream>

namespace ohio::sim {
namespace {

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> cells;
  std::istringstream in(line);
  for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
  return cells;
}

}  // namespace

InterNodeTable ProposeInterNodeRows(const std::vector<SimulatedPoint>& points) {
  // By N, then M: the fastest of what ran.
  std::map<uint32_t, std::map<uint64_t, SimulatedPoint>> best;
  for (const SimulatedPoint& p : points) {
    auto [it, fresh] = best[p.nodes].emplace(p.bytes_per_rank, p);
    if (!fresh && p.seconds < it->second.seconds) it->second = p;
  }
  InterNodeTable table;
  for (const auto& [nodes, by_m] : best) {
    InterNodeRule* run = nullptr;  // this N's row the last M extended
    for (const auto& [m, p] : by_m) {
      const uint64_t block = m * p.ppn * p.ppn;
      if (run != nullptr && run->internode == p.internode) {
        run->max_block_bytes = block;
        continue;
      }
      table.rules.push_back(InterNodeRule{nodes, block, p.internode, nodes, /*simulated=*/true});
      run = &table.rules.back();
    }
  }
  return table;
}

Result<SelectionTable> ProposeSelectionRows(const std::string& csv, const std::string& source, uint32_t nodes,
                                            uint32_t ppn, double win_ratio) {
  std::istringstream in(csv);
  std::string line;
  int number = 0;
  auto bad = [&](const std::string& why) {
    return Status(Code::kInvalidArgument, source + ":" + std::to_string(number) + ": " + why);
  };
  std::vector<size_t> smpi_columns;  // the smpi_X_us columns
  SelectionTable table;
  SelectionRule* run = nullptr;  // the ohio row the last size extended
  while (std::getline(in, line)) {
    ++number;
    const std::vector<std::string> cells = SplitCsv(line);
    if (number == 1) {
      if (cells.size() < 2 || cells[0] != "bytes" || cells[1] != "ohio_sim_us") {
        return bad("expected sim/compare.sh's header 'bytes,ohio_sim_us,...'");
      }
      for (size_t c = 2; c < cells.size(); ++c) {
        if (cells[c].rfind("smpi_", 0) == 0) smpi_columns.push_back(c);
      }
      if (smpi_columns.empty()) return bad("no smpi_X_us column: nothing to compare ohio with");
      continue;
    }
    if (cells.size() < 2) continue;
    uint64_t bytes = 0;
    double ohio = 0, fastest = 0;
    try {
      bytes = std::stoull(cells[0]);
      ohio = std::stod(cells[1]);
      bool any = false;
      for (size_t c : smpi_columns) {
        if (c >= cells.size() || cells[c] == "-") continue;
        const double t = std::stod(cells[c]);
        fastest = any ? std::min(fastest, t) : t;
        any = true;
      }
      if (!any) continue;  // no SMPI time for this size: no verdict
    } catch (const std::exception&) {
      return bad("expected numbers (bytes, then microseconds), got '" + line + "'");
    }
    if (ohio > win_ratio * fastest) {
      run = nullptr;
      continue;
    }
    if (run != nullptr) {
      run->bytes.max = bytes;
      continue;
    }
    SelectionRule row;
    row.functions = 1u << static_cast<uint32_t>(SelectedFunction::kAlltoall);
    row.nodes = TableRange{nodes, nodes};
    row.ppn = TableRange{ppn, ppn};
    row.bytes = TableRange{bytes, bytes};
    row.serve = true;
    row.simulated = true;
    table.rules.push_back(row);
    run = &table.rules.back();
  }
  SelectionRule rest;
  rest.functions = 1u << static_cast<uint32_t>(SelectedFunction::kAlltoall);
  rest.nodes = TableRange{nodes, nodes};
  rest.ppn = TableRange{ppn, ppn};
  rest.serve = false;
  rest.simulated = true;
  table.rules.push_back(rest);
  return table;
}

}  // namespace ohio::sim
