// `ohio-plan --select`: which calls of one shape ohio serves and which it hands to the MPI
// library, by the selection table (shm/tables/selection_table.h), and the row that decides each,
// plus a sweep of the bytes per rank pair showing where the verdict changes. An admin reads a
// measured table back through it before installing it. Pure, like plan_report.h.
#pragma once

#include <cstdint>
#include <string>

#include "shm/tables/selection_table.h"

namespace ohio {

// The table (with `source` and its digest), the verdict of every function for `shape` and
// `bytes_per_pair` with its row, whether the vector functions' verdict depends on a rank's bytes,
// and for MPI_Alltoall and MPI_Ialltoall the sizes from 1 B to 1 MiB, by powers of 2, where the
// verdict changes.
std::string RenderSelection(const SelectionTable& table, const std::string& source, const SelectionShape& shape,
                            uint64_t bytes_per_pair);

}  // namespace ohio
