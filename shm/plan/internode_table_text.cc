#include "shm/plan/internode_table_text.h"

#include <cstdio>
#include <sstream>
#include <vector>

namespace ohio {
namespace {

constexpr uint64_t kAnyBlock = UINT64_MAX;

struct Unit {
  const char* suffix;
  int shift;
};
// Largest first: FormatBytes picks the largest unit that divides exactly.
constexpr Unit kUnits[] = {{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}};

// Digits only, no sign, no overflow.
std::optional<uint64_t> ParseCount(const std::string& s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

std::optional<uint64_t> ParseBytes(const std::string& s) {
  if (s == "any") return kAnyBlock;
  size_t digits = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
  auto n = ParseCount(s.substr(0, digits));
  if (!n) return std::nullopt;
  const std::string suffix = s.substr(digits);
  if (suffix.empty()) return n;
  for (const Unit& u : kUnits) {
    if (suffix != u.suffix) continue;
    if (*n > (kAnyBlock - 1) >> u.shift) return std::nullopt;
    return *n << u.shift;
  }
  return std::nullopt;
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes == kAnyBlock) return "any";
  for (const Unit& u : kUnits) {
    if (u.shift > 0 && bytes != 0 && bytes % (uint64_t{1} << u.shift) == 0) {
      return std::to_string(bytes >> u.shift) + u.suffix;
    }
  }
  return std::to_string(bytes);
}

// "N", "N-M" or "N+" into the rule's node range; "" when it parses, else why not.
std::string ParseNodes(const std::string& s, InterNodeRule* rule) {
  const std::string form = "expected nodes as N, N-M or N+ (N >= 2), got '" + s + "'";
  std::string lo = s, hi;
  bool open = false;
  if (!s.empty() && s.back() == '+') {
    lo = s.substr(0, s.size() - 1);
    open = true;
  } else if (auto dash = s.find('-'); dash != std::string::npos) {
    lo = s.substr(0, dash);
    hi = s.substr(dash + 1);
  }
  auto min = ParseCount(lo);
  if (!min || *min < 2 || *min > UINT32_MAX) return form;
  rule->min_nodes = static_cast<uint32_t>(*min);
  rule->max_nodes = open ? UINT32_MAX : rule->min_nodes;
  if (!hi.empty()) {
    auto max = ParseCount(hi);
    if (!max || *max > UINT32_MAX) return form;
    if (*max < *min) return "the node range " + s + " is empty";
    rule->max_nodes = static_cast<uint32_t>(*max);
  }
  return "";
}

std::string FormatNodes(const InterNodeRule& r) {
  if (r.max_nodes == UINT32_MAX) return std::to_string(r.min_nodes) + "+";
  if (r.max_nodes == r.min_nodes) return std::to_string(r.min_nodes);
  return std::to_string(r.min_nodes) + "-" + std::to_string(r.max_nodes);
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
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(word);
    if (w.empty()) continue;
    auto bad = [&](const std::string& why) {
      return Status(Code::kInvalidArgument, "inter-node table " + source + ":" + std::to_string(lineno) + ": " + why);
    };
    if (w.size() != 3) {
      return bad("expected 'nodes max-block algorithm' (e.g. '4+ 1KiB hypercube'), got " + std::to_string(w.size()) +
                 " words");
    }
    InterNodeRule rule;
    if (std::string why = ParseNodes(w[0], &rule); !why.empty()) return bad(why);
    auto block = ParseBytes(w[1]);
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
  return FormatNodes(r) + " " + FormatBytes(r.max_block_bytes) + " " + InterNodeAlgorithmName(r.internode);
}

std::string FormatInterNodeTable(const InterNodeTable& table) {
  std::string out;
  for (const InterNodeRule& r : table.rules) out += FormatInterNodeRule(r) + "\n";
  return out;
}

std::string InterNodeTableDigest(const InterNodeTable& table) {
  // FNV-1a: stable across builds and hosts, which is all a comparison between nodes needs.
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : FormatInterNodeTable(table)) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

InterNodeTable ForcedInterNodeTable(InterNodeAlgorithm internode) { return InterNodeTable{{InterNodeRule{2, kAnyBlock, internode}}}; }

}  // namespace ohio
