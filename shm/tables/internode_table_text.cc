#include "shm/tables/internode_table_text.h"

#include <vector>

#include "shm/tables/table_words.h"

namespace ohio {
namespace {

// "N", "N-M", "N+" or "any" (N >= 2) into the rule's node range; "" when it parses, else why not.
std::string ParseNodes(const std::string& s, InterNodeRule* rule) {
  TableRange range;
  if (std::string why = ParseTableRange(s, "nodes", 2, /*bytes=*/false, &range); !why.empty()) return why;
  if (range.min > UINT32_MAX || (range.max != UINT64_MAX && range.max > UINT32_MAX)) {
    return "nodes " + s + " is more nodes than a group can have";
  }
  rule->min_nodes = static_cast<uint32_t>(range.min);
  rule->max_nodes = range.max == UINT64_MAX ? UINT32_MAX : static_cast<uint32_t>(range.max);
  return "";
}

std::string FormatNodes(const InterNodeRule& r) {
  if (r.max_nodes == UINT32_MAX) return std::to_string(r.min_nodes) + "+";
  return FormatTableRange(TableRange{r.min_nodes, r.max_nodes}, /*bytes=*/false, 2);
}

}  // namespace

std::optional<InterNodeAlgorithm> ParseInterNodeAlgorithmName(const std::string& name) {
  for (InterNodeAlgorithm l : {InterNodeAlgorithm::kPairwise, InterNodeAlgorithm::kHypercube, InterNodeAlgorithm::kDirect}) {
    if (name == InterNodeAlgorithmName(l)) return l;
  }
  return std::nullopt;
}

Result<InterNodeTable> ParseInterNodeTable(const std::string& text, const std::string& source) {
  InterNodeTable table;
  for (TableLine& line : TableLines(text)) {
    const std::vector<std::string>& w = line.words;
    auto bad = [&](const std::string& why) {
      return Status(Code::kInvalidArgument, "inter-node table " + source + ":" + std::to_string(line.number) + ": " + why);
    };
    InterNodeRule rule;
    if (std::string why =
            TakeSimulatedMarker(&line.words, 3, "'nodes max-block algorithm' (e.g. '4+ 1KiB hypercube')", &rule.simulated);
        !why.empty()) {
      return bad(why);
    }
    if (std::string why = ParseNodes(w[0], &rule); !why.empty()) return bad(why);
    auto block = ParseTableBytes(w[1]);
    if (!block) return bad("expected max-block as bytes (e.g. 4096 or 4KiB) or 'any', got '" + w[1] + "'");
    rule.max_block_bytes = *block;
    auto internode = ParseInterNodeAlgorithmName(w[2]);
    if (!internode) return bad("unknown inter-node algorithm '" + w[2] + "' (pairwise, hypercube or direct)");
    rule.internode = *internode;
    table.rules.push_back(rule);
  }
  return table;
}

std::string FormatInterNodeRule(const InterNodeRule& r) {
  return FormatNodes(r) + " " + FormatTableBytes(r.max_block_bytes) + " " + InterNodeAlgorithmName(r.internode) +
         (r.simulated ? std::string(" ") + kSimulatedRowMarker : "");
}

std::string FormatInterNodeTable(const InterNodeTable& table) {
  std::string out;
  for (const InterNodeRule& r : table.rules) out += FormatInterNodeRule(r) + "\n";
  return out;
}

std::string InterNodeTableDigest(const InterNodeTable& table) { return TableDigest(FormatInterNodeTable(table)); }

InterNodeTable ForcedInterNodeTable(InterNodeAlgorithm internode) { return InterNodeTable{{InterNodeRule{2, kAnyBytes, internode}}}; }

}  // namespace ohio
