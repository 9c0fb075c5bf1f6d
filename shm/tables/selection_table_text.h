// The selection table (shm/tables/selection_table.h) as text: what `selection-table = PATH` names,
// what ohiod hands every rank at join, what deploy/measure-selection.sh writes, and what a
// group's nodes compare at setup (its digest). One row a line, `#` starts a comment:
//
//   # function  nodes  ppn  transport  bytes      path
//   alltoall    2+     any  tcp        1-4KiB     ohio
//   alltoall    1      4    any        512-16KiB  ohio
//   ialltoall   any    any  any        4KiB+      ohio
//
// function: alltoall, alltoallv, alltoallw, ialltoall, ialltoallv or any; nodes: the
// communicator's nodes; ppn: the most ranks it has on one node; each "N", "N-M", "N+" or "any"
// (N >= 1); transport: tcp, verbs or any; bytes: bytes per rank pair (MPI_Alltoall's sendcount
// times its type's size), "N", "N-M", "N+" or "any", each number with an optional B, KiB, MiB,
// GiB or TiB suffix; path: ohio (served) or mpi (handed to the MPI library). The first row
// matching a call wins; a call no row matches goes to the MPI library.
#pragma once

#include <string>

#include "common/status.h"
#include "shm/tables/selection_table.h"

namespace ohio {

// `source` names the text in errors ("selection table /etc/ohio/selection.table:3: ...").
Result<SelectionTable> ParseSelectionTable(const std::string& text, const std::string& source);

// One canonical line per row: two tables that decide alike row by row print alike whatever
// their spacing, comments or units. What ohiod hands the ranks.
std::string FormatSelectionTable(const SelectionTable& table);
std::string FormatSelectionRule(const SelectionRule& rule);

// 16 hex digits of a hash of FormatSelectionTable: what the nodes of a group compare at setup.
std::string SelectionTableDigest(const SelectionTable& table);

}  // namespace ohio
