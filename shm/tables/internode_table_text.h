// The inter-node table as text: what `internode-table = PATH` names, what `ohio-plan --explain` prints,
// and what a group's nodes compare at setup (its digest). One row a line, `#` starts a comment:
//
//   # nodes  max-block  algorithm
//   4+       1KiB       hypercube
//   2-8      64KiB      pairwise
//   2+       any        direct
//
// nodes: "N" (exactly N), "N-M" (N to M), "N+" (N or more) or "any", N >= 2; max-block: the largest
// node-to-node block (M x max ppn x max ppn, shm/tables/internode_choice.h) in bytes, with an optional
// B, KiB, MiB, GiB or TiB suffix, or "any"; algorithm: pairwise, hypercube or direct. The first
// row matching a call wins; none matching means pairwise.
#pragma once

#include <optional>
#include <string>

#include "common/status.h"
#include "shm/tables/internode_choice.h"

namespace ohio {

std::optional<InterNodeAlgorithm> ParseInterNodeAlgorithmName(const std::string& name);

// `source` names the text in errors ("inter-node table /etc/ohio/internode.table:3: ...").
Result<InterNodeTable> ParseInterNodeTable(const std::string& text, const std::string& source);

// One canonical line per row, in the format above: two tables that choose alike row by row
// print alike whatever their spacing, comments or units.
std::string FormatInterNodeTable(const InterNodeTable& table);
std::string FormatInterNodeRule(const InterNodeRule& rule);

// 16 hex digits of a hash of FormatInterNodeTable: what the nodes of a group compare at setup.
std::string InterNodeTableDigest(const InterNodeTable& table);

// The table of a forced choice (`internode-algorithm = direct`, OHIO_INTERNODE_ALGORITHM=direct): one row for every call.
InterNodeTable ForcedInterNodeTable(InterNodeAlgorithm internode);

}  // namespace ohio
