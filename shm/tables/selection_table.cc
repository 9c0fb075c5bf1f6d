#include "shm/tables/selection_table.h"

#include <algorithm>

namespace ohio {
namespace {

constexpr const char* kFunctionNames[kSelectedFunctionCount] = {"alltoall", "alltoallv", "alltoallw", "ialltoall",
                                                               "ialltoallv"};

uint32_t Bit(SelectedFunction f) { return 1u << static_cast<uint32_t>(f); }

bool ShapeMatches(const SelectionRule& r, SelectedFunction function, const SelectionShape& shape) {
  return (r.functions & Bit(function)) != 0 && r.nodes.Contains(shape.nodes) && r.ppn.Contains(shape.ppn) &&
         (!r.transport || *r.transport == shape.transport);
}

SelectionRule Row(std::initializer_list<SelectedFunction> functions, TableRange nodes, TableRange bytes) {
  SelectionRule r;
  r.functions = 0;
  for (SelectedFunction f : functions) r.functions |= Bit(f);
  r.nodes = nodes;
  r.bytes = bytes;
  r.serve = true;
  return r;
}

}  // namespace

const char* SelectedFunctionName(SelectedFunction f) { return kFunctionNames[static_cast<uint32_t>(f)]; }

std::optional<SelectedFunction> ParseSelectedFunction(const std::string& name) {
  for (uint32_t i = 0; i < kSelectedFunctionCount; ++i) {
    if (name == kFunctionNames[i]) return static_cast<SelectedFunction>(i);
  }
  return std::nullopt;
}

const char* SelectedTransportName(SelectedTransport t) { return t == SelectedTransport::kVerbs ? "verbs" : "tcp"; }

std::optional<SelectedTransport> ParseSelectedTransport(const std::string& name) {
  if (name == "tcp") return SelectedTransport::kTcp;
  if (name == "verbs") return SelectedTransport::kVerbs;
  return std::nullopt;
}

SelectionTable DefaultSelectionTable() {
  // Measured with deploy/measure-selection.sh on a 2-core host, Open MPI 4.1 beneath, median of 7
  // interleaved runs (docs/PERFORMANCE.md, "What a user gets: the selection table", has the
  // ratios). Each row serves the range where ohio took less of the library's time: across 4
  // emulated nodes x 2 ranks MPI_Alltoall up to 4 KiB per rank pair; on one node x 4 from 512 B
  // to 16 KiB (from 256 KiB too close to call, so the library's). MPI_Ialltoall is weighed by
  // what MPI_Ialltoall and MPI_Wait cost a program computing between them away from its core:
  // across nodes up to 32 KiB, where ohiod finishes within the computation, and not above, where
  // it does not; on one node from 32 KiB to 256 KiB (below, the library's shared memory moves
  // small calls within the post).
  using F = SelectedFunction;
  constexpr uint64_t KiB = 1024;
  const TableRange across_nodes{2, UINT64_MAX}, one_node{1, 1};
  return SelectionTable{{
      Row({F::kAlltoall, F::kAlltoallv, F::kAlltoallw}, across_nodes, TableRange{0, 4 * KiB}),
      Row({F::kAlltoall, F::kAlltoallv, F::kAlltoallw}, one_node, TableRange{512, 16 * KiB}),
      Row({F::kIalltoall, F::kIalltoallv}, across_nodes, TableRange{0, 32 * KiB}),
      Row({F::kIalltoall, F::kIalltoallv}, one_node, TableRange{32 * KiB, 256 * KiB}),
  }};
}

Selection Select(const SelectionTable& table, SelectedFunction function, const SelectionShape& shape,
                 uint64_t bytes_per_pair) {
  for (size_t i = 0; i < table.rules.size(); ++i) {
    const SelectionRule& r = table.rules[i];
    if (ShapeMatches(r, function, shape) && r.bytes.Contains(bytes_per_pair)) {
      return Selection{r.serve, static_cast<int>(i)};
    }
  }
  return Selection{};
}

std::optional<bool> SelectionWhateverTheBytes(const SelectionTable& table, SelectedFunction function,
                                              const SelectionShape& shape) {
  // Walk the rows that apply to this shape in order, tracking which bytes are still undecided:
  // the verdict is uniform if every byte count that reaches a row gets the same one. Rows whose
  // byte ranges are unions of intervals make this exact with a list of undecided intervals.
  std::vector<TableRange> undecided{TableRange{0, UINT64_MAX}};
  std::optional<bool> verdict;
  for (const SelectionRule& r : table.rules) {
    if (!ShapeMatches(r, function, shape)) continue;
    std::vector<TableRange> rest;
    for (const TableRange& u : undecided) {
      const uint64_t lo = std::max(u.min, r.bytes.min), hi = std::min(u.max, r.bytes.max);
      if (lo > hi) {
        rest.push_back(u);
        continue;
      }
      if (verdict && *verdict != r.serve) return std::nullopt;
      verdict = r.serve;
      if (u.min < lo) rest.push_back(TableRange{u.min, lo - 1});
      if (hi < u.max) rest.push_back(TableRange{hi + 1, u.max});
    }
    undecided = std::move(rest);
    if (undecided.empty()) break;
  }
  if (!undecided.empty()) {  // those bytes match no row: the library
    if (verdict && *verdict) return std::nullopt;
    verdict = false;
  }
  return verdict;
}

}  // namespace ohio
