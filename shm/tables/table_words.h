// The words the tables ohiod reads are written in (the inter-node table,
// shm/tables/internode_table_text.h, and the selection table, shm/tables/selection_table_text.h): byte
// sizes with units, counts, ranges of either, and the digest two nodes compare. One reading of
// each, so "4KiB" or "2-8" means the same in every table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ohio {

// One row of a table's text: its line number (from 1, for errors) and its words, the comment
// ('#' to the end of the line) left out.
struct TableLine {
  int number = 0;
  std::vector<std::string> words;
};

// The rows of a table's text, blank and comment-only lines skipped.
std::vector<TableLine> TableLines(const std::string& text);

// "any" as a byte size: no bound.
constexpr uint64_t kAnyBytes = UINT64_MAX;

// Digits only, no sign, no overflow.
std::optional<uint64_t> ParseTableCount(const std::string& s);

// "4096", "4KiB", "1MiB" (B, KiB, MiB, GiB, TiB), or "any" (kAnyBytes).
std::optional<uint64_t> ParseTableBytes(const std::string& s);

// The largest unit that divides exactly: 4096 is "4KiB", 1000 is "1000", kAnyBytes "any".
std::string FormatTableBytes(uint64_t bytes);

// An inclusive range [min, max]; max UINT64_MAX is open ("N+").
struct TableRange {
  uint64_t min = 0;
  uint64_t max = UINT64_MAX;
  bool Contains(uint64_t v) const { return v >= min && v <= max; }
};

// "N" (exactly N), "N-M" (N to M), "N+" (N or more) or "any", each number a count or, where
// `bytes`, a byte size (ParseTableBytes), at least `least`. "" when it parses, else why not, with
// `what` naming the column ("nodes", "bytes").
std::string ParseTableRange(const std::string& s, const char* what, uint64_t least, bool bytes, TableRange* range);

// The range as ParseTableRange reads it, numbers as bytes with units where `bytes`; "any" for
// every value from `least`.
std::string FormatTableRange(const TableRange& range, bool bytes, uint64_t least);

// The word that ends a row ohio-sim proposed rather than one measured (docs/SIMULATION.md): the
// row decides as any other, and the tools that show which row decided a call say it was
// simulated.
constexpr const char* kSimulatedRowMarker = "simulated";

// A row of `columns` words, or of one more that is the marker: takes the marker off `words` and
// sets *simulated. "" when the row has either, else why not (`example`: the columns, quoted, and
// a row).
std::string TakeSimulatedMarker(std::vector<std::string>* words, size_t columns, const std::string& example,
                                bool* simulated);

// 16 hex digits of an FNV-1a hash of `canonical`: stable across builds and hosts, which is all a
// comparison between nodes needs.
std::string TableDigest(const std::string& canonical);

}  // namespace ohio
