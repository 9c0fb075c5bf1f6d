#include "shm/tables/table_words.h"

#include <cstdio>
#include <sstream>

namespace ohio {
namespace {

struct Unit {
  const char* suffix;
  int shift;
};
// Largest first: FormatTableBytes picks the largest unit that divides exactly.
constexpr Unit kUnits[] = {{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}};

}  // namespace

std::vector<TableLine> TableLines(const std::string& text) {
  std::vector<TableLine> lines;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    TableLine row{number, {}};
    for (std::string word; words >> word;) row.words.push_back(word);
    if (!row.words.empty()) lines.push_back(std::move(row));
  }
  return lines;
}

std::string TakeSimulatedMarker(std::vector<std::string>* words, size_t columns, const std::string& example,
                                bool* simulated) {
  *simulated = false;
  if (words->size() == columns + 1) {
    if (words->back() != kSimulatedRowMarker) {
      return "expected '" + std::string(kSimulatedRowMarker) + "' after the " + std::to_string(columns) +
             " columns (the marker of a row ohio-sim proposed), got '" + words->back() + "'";
    }
    words->pop_back();
    *simulated = true;
    return "";
  }
  if (words->size() == columns) return "";
  return "expected " + example + ", got " + std::to_string(words->size()) + " words";
}

std::optional<uint64_t> ParseTableCount(const std::string& s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

std::optional<uint64_t> ParseTableBytes(const std::string& s) {
  if (s == "any") return kAnyBytes;
  size_t digits = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
  auto n = ParseTableCount(s.substr(0, digits));
  if (!n) return std::nullopt;
  const std::string suffix = s.substr(digits);
  if (suffix.empty()) return n;
  for (const Unit& u : kUnits) {
    if (suffix != u.suffix) continue;
    if (*n > (kAnyBytes - 1) >> u.shift) return std::nullopt;
    return *n << u.shift;
  }
  return std::nullopt;
}

std::string FormatTableBytes(uint64_t bytes) {
  if (bytes == kAnyBytes) return "any";
  for (const Unit& u : kUnits) {
    if (u.shift > 0 && bytes != 0 && bytes % (uint64_t{1} << u.shift) == 0) {
      return std::to_string(bytes >> u.shift) + u.suffix;
    }
  }
  return std::to_string(bytes);
}

std::string ParseTableRange(const std::string& s, const char* what, uint64_t least, bool bytes, TableRange* range) {
  const std::string form = std::string("expected ") + what + " as N, N-M, N+ or any (N >= " + std::to_string(least) +
                           "), got '" + s + "'";
  if (s == "any") {
    *range = TableRange{least, UINT64_MAX};
    return "";
  }
  auto number = [&](const std::string& word) -> std::optional<uint64_t> {
    if (bytes) {
      auto v = ParseTableBytes(word);
      if (v == kAnyBytes) return std::nullopt;  // "any" only as the whole range
      return v;
    }
    return ParseTableCount(word);
  };
  std::string lo = s, hi;
  bool open = false;
  if (!s.empty() && s.back() == '+') {
    lo = s.substr(0, s.size() - 1);
    open = true;
  } else if (auto dash = s.find('-'); dash != std::string::npos) {
    lo = s.substr(0, dash);
    hi = s.substr(dash + 1);
  }
  auto min = number(lo);
  if (!min || *min < least) return form;
  range->min = *min;
  range->max = open ? UINT64_MAX : *min;
  if (!hi.empty()) {
    auto max = number(hi);
    if (!max) return form;
    if (*max < *min) return std::string("the ") + what + " range " + s + " is empty";
    range->max = *max;
  }
  return "";
}

std::string FormatTableRange(const TableRange& r, bool bytes, uint64_t least) {
  if (r.min == least && r.max == UINT64_MAX) return "any";
  auto number = [&](uint64_t v) { return bytes ? FormatTableBytes(v) : std::to_string(v); };
  if (r.max == UINT64_MAX) return number(r.min) + "+";
  if (r.max == r.min) return number(r.min);
  return number(r.min) + "-" + number(r.max);
}

std::string TableDigest(const std::string& canonical) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : canonical) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

}  // namespace ohio
