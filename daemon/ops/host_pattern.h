// Which node names an admin's rule admits as this cluster's nodes (config key peer-hosts): a
// comma-separated list of Slurm-style hostlists and globs, e.g. "node[001-128],gpu[1-4,7],login*".
// A bracket holds numbers and ranges of numbers; a range whose first number has leading zeros
// matches names zero-padded to its width, as Slurm writes them ("node[001-128]" admits node007,
// not node7). Outside brackets '*' matches any run of characters and '?' any one character. A
// name is admitted when one of the list's patterns matches all of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ohio {

class HostPatterns {
 public:
  static constexpr size_t kLongestHostName = 253;

  // kInvalidArgument naming the faulty pattern and what is wrong with it.
  static Result<HostPatterns> Parse(const std::string& text);

  bool empty() const { return patterns_.empty(); }
  bool Matches(const std::string& name) const;

 private:
  struct NumberRange {
    uint64_t first = 0;
    uint64_t last = 0;
    size_t width = 1;  // digits of `first` as written: the padding of every number of the range
  };
  // Literal text (with '*' and '?'), or a bracket of number ranges.
  struct Piece {
    std::string text;
    std::vector<NumberRange> numbers;  // non-empty: a bracket
  };
  using Pattern = std::vector<Piece>;
  static bool MatchFrom(const Pattern& p, size_t piece, size_t at_char, const std::string& name, size_t pos);
  static bool MatchText(const Pattern& p, size_t piece, size_t at_char, const std::string& name, size_t pos);

  std::vector<Pattern> patterns_;
};

}  // namespace ohio
