// The leader table as text: what `leader-table = PATH` names, what `ohio-plan --explain` prints,
// and what a group's nodes compare at setup (its digest). One row a line, `#` starts a comment:
//
//   # nodes  max-block  leader
//   4+       1KiB       hypercube
//   2-8      64KiB      pairwise
//   2+       any        direct
//
// nodes: "N" (exactly N), "N-M" (N to M) or "N+" (N or more), N >= 2; max-block: the largest
// node-to-node block (M x max ppn x max ppn, shm/plan/leader_choice.h) in bytes, with an optional
// B, KiB, MiB, GiB or TiB suffix, or "any"; leader: pairwise, hypercube or direct. The first
// row matching a call wins; none matching means pairwise.
#pragma once

#include <optional>
#include <string>

#include "common/status.h"
#include "shm/plan/leader_choice.h"

namespace ohio {

std::optional<Leader> ParseLeaderName(const std::string& name);

// `source` names the text in errors ("leader table /etc/ohio/leader.table:3: ...").
Result<LeaderTable> ParseLeaderTable(const std::string& text, const std::string& source);

// One canonical line per row, in the format above: two tables that choose alike row by row
// print alike whatever their spacing, comments or units.
std::string FormatLeaderTable(const LeaderTable& table);
std::string FormatLeaderRule(const LeaderRule& rule);

// 16 hex digits of a hash of FormatLeaderTable: what the nodes of a group compare at setup.
std::string LeaderTableDigest(const LeaderTable& table);

// The table of a forced choice (`leader = direct`, OHIO_LEADER=direct): one row for every call.
LeaderTable ForcedLeaderTable(Leader leader);

}  // namespace ohio
