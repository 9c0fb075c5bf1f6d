#include "shm/tables/selection_table_text.h"

#include <sstream>
#include <vector>

namespace ohio {
namespace {

constexpr uint32_t kAllFunctions = (1u << kSelectedFunctionCount) - 1;

std::string FormatFunctions(uint32_t functions) {
  if (functions == kAllFunctions) return "any";
  std::string out;
  for (uint32_t i = 0; i < kSelectedFunctionCount; ++i) {
    if ((functions & (1u << i)) == 0) continue;
    if (!out.empty()) out += ",";
    out += SelectedFunctionName(static_cast<SelectedFunction>(i));
  }
  return out;
}

// "any", one function, or several separated by commas.
std::string ParseFunctions(const std::string& s, uint32_t* functions) {
  if (s == "any") {
    *functions = kAllFunctions;
    return "";
  }
  *functions = 0;
  std::istringstream names(s);
  for (std::string name; std::getline(names, name, ',');) {
    auto f = ParseSelectedFunction(name);
    if (!f) {
      return "unknown function '" + name + "' (alltoall, alltoallv, alltoallw, ialltoall, ialltoallv or any)";
    }
    *functions |= 1u << static_cast<uint32_t>(*f);
  }
  if (*functions == 0) return "expected a function, got '" + s + "'";
  return "";
}

}  // namespace

Result<SelectionTable> ParseSelectionTable(const std::string& text, const std::string& source) {
  SelectionTable table;
  for (TableLine& line : TableLines(text)) {
    const std::vector<std::string>& w = line.words;
    auto bad = [&](const std::string& why) {
      return Status(Code::kInvalidArgument, "selection table " + source + ":" + std::to_string(line.number) + ": " + why);
    };
    SelectionRule rule;
    if (std::string why = TakeSimulatedMarker(
            &line.words, 6, "'function nodes ppn transport bytes path' (e.g. 'alltoall 2+ any tcp 1-4KiB ohio')",
            &rule.simulated);
        !why.empty()) {
      return bad(why);
    }
    if (std::string why = ParseFunctions(w[0], &rule.functions); !why.empty()) return bad(why);
    if (std::string why = ParseTableRange(w[1], "nodes", 1, /*bytes=*/false, &rule.nodes); !why.empty()) return bad(why);
    if (std::string why = ParseTableRange(w[2], "ppn", 1, /*bytes=*/false, &rule.ppn); !why.empty()) return bad(why);
    if (w[3] != "any") {
      rule.transport = ParseSelectedTransport(w[3]);
      if (!rule.transport) return bad("unknown transport '" + w[3] + "' (tcp, verbs or any)");
    }
    if (std::string why = ParseTableRange(w[4], "bytes", 0, /*bytes=*/true, &rule.bytes); !why.empty()) return bad(why);
    if (w[5] == "ohio") {
      rule.serve = true;
    } else if (w[5] == "mpi") {
      rule.serve = false;
    } else {
      return bad("unknown path '" + w[5] + "' (ohio: served through ohio; mpi: handed to the MPI library)");
    }
    table.rules.push_back(rule);
  }
  return table;
}

std::string FormatSelectionRule(const SelectionRule& r) {
  return FormatFunctions(r.functions) + " " + FormatTableRange(r.nodes, false, 1) + " " +
         FormatTableRange(r.ppn, false, 1) + " " + (r.transport ? SelectedTransportName(*r.transport) : "any") + " " +
         FormatTableRange(r.bytes, true, 0) + " " + (r.serve ? "ohio" : "mpi") +
         (r.simulated ? std::string(" ") + kSimulatedRowMarker : "");
}

std::string FormatSelectionTable(const SelectionTable& table) {
  std::string out;
  for (const SelectionRule& r : table.rules) out += FormatSelectionRule(r) + "\n";
  return out;
}

std::string SelectionTableDigest(const SelectionTable& table) { return TableDigest(FormatSelectionTable(table)); }

}  // namespace ohio
