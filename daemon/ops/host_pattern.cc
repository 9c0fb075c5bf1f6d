#include "daemon/ops/host_pattern.h"

#include <cctype>

namespace ohio {
namespace {

bool AllDigits(const std::string& s) {
  if (s.empty() || s.size() > 18) return false;  // 18 digits fit a uint64_t
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// The patterns of the list: split at commas outside brackets.
std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  std::string current;
  int depth = 0;
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(current);
      current.clear();
      continue;
    }
    current += c;
  }
  out.push_back(current);
  for (std::string& s : out) {
    s.erase(0, s.find_first_not_of(" \t"));
    s.erase(s.find_last_not_of(" \t") + 1);
  }
  return out;
}

}  // namespace

Result<HostPatterns> HostPatterns::Parse(const std::string& text) {
  HostPatterns out;
  if (text.find_first_not_of(" \t") == std::string::npos) return out;
  for (const std::string& word : SplitList(text)) {
    auto bad = [&](const std::string& why) {
      return Status(Code::kInvalidArgument, "peer-hosts: '" + word + "': " + why +
                                                " (expected names, globs with * and ?, or Slurm hostlists "
                                                "such as node[001-128])");
    };
    if (word.empty()) return bad("an empty pattern");
    Pattern pattern;
    size_t i = 0;
    while (i < word.size()) {
      if (word[i] == ']') return bad("a ']' without its '['");
      if (word[i] != '[') {
        const size_t end = word.find_first_of("[]", i);
        pattern.push_back({word.substr(i, end == std::string::npos ? std::string::npos : end - i), {}});
        i = end == std::string::npos ? word.size() : end;
        continue;
      }
      const size_t close = word.find(']', i);
      if (close == std::string::npos) return bad("a '[' without its ']'");
      const std::string inside = word.substr(i + 1, close - i - 1);
      if (inside.find('[') != std::string::npos) return bad("brackets inside brackets");
      Piece bracket;
      size_t from = 0;
      for (;;) {
        const size_t comma = inside.find(',', from);
        const std::string item = inside.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
        const size_t dash = item.find('-');
        const std::string lo = item.substr(0, dash);
        const std::string hi = dash == std::string::npos ? lo : item.substr(dash + 1);
        if (!AllDigits(lo) || !AllDigits(hi)) return bad("'" + item + "' in brackets is not a number or a range a-b");
        NumberRange r{std::stoull(lo), std::stoull(hi), lo.size()};
        if (r.first > r.last) return bad("the range " + item + " runs backwards");
        bracket.numbers.push_back(r);
        if (comma == std::string::npos) break;
        from = comma + 1;
      }
      pattern.push_back(std::move(bracket));
      i = close + 1;
    }
    out.patterns_.push_back(std::move(pattern));
  }
  return out;
}

bool HostPatterns::Matches(const std::string& name) const {
  // No host name is longer (RFC 1035); a longer one, as a user may write it, is not worth the
  // time globs take on it.
  if (name.size() > kLongestHostName) return false;
  for (const Pattern& p : patterns_) {
    if (MatchFrom(p, 0, 0, name, 0)) return true;
  }
  return false;
}

bool HostPatterns::MatchFrom(const Pattern& p, size_t piece, size_t at_char, const std::string& name, size_t pos) {
  if (piece == p.size()) return pos == name.size();
  if (p[piece].numbers.empty()) return MatchText(p, piece, at_char, name, pos);
  // A bracket takes a run of digits: every length of it, as the text after may begin with digits.
  size_t end = pos;
  while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
  for (size_t len = 1; pos + len <= end && len <= 18; ++len) {
    const std::string digits = name.substr(pos, len);
    const uint64_t value = std::stoull(digits);
    for (const NumberRange& r : p[piece].numbers) {
      if (value < r.first || value > r.last) continue;
      // Written as the range writes its numbers: padded to its width, no other leading zero.
      std::string canonical = std::to_string(value);
      if (canonical.size() < r.width) canonical.insert(0, r.width - canonical.size(), '0');
      if (canonical == digits && MatchFrom(p, piece + 1, 0, name, pos + len)) return true;
    }
  }
  return false;
}

bool HostPatterns::MatchText(const Pattern& p, size_t piece, size_t at_char, const std::string& name, size_t pos) {
  const std::string& text = p[piece].text;
  while (at_char < text.size()) {
    const char c = text[at_char];
    if (c == '*') {
      for (size_t skip = pos; skip <= name.size(); ++skip) {
        if (MatchText(p, piece, at_char + 1, name, skip)) return true;
      }
      return false;
    }
    if (pos == name.size() || (c != '?' && c != name[pos])) return false;
    ++at_char;
    ++pos;
  }
  return MatchFrom(p, piece + 1, 0, name, pos);
}

}  // namespace ohio
