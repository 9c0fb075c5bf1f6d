// Which calls ohio serves and which it hands to the MPI library beneath it. ohio is not faster
// at every size: on one node the library's shared-memory path wins for large blocks, and across
// nodes a medium call through ohio can cost more than the library's own. So every rank looks its
// call up in a table of measured crossovers, as Open MPI's tuned component reads its dynamic
// rules file and MPICH its JSON tuning files, and serves where ohio wins.
//
// Pure: every rank of a communicator holds the same table (its node's daemon hands it over at
// join, and the daemons of a group compare the table's digest at setup), the same shape and,
// for MPI_Alltoall and MPI_Ialltoall, the same bytes, so every rank reaches the same verdict
// without a word. Its text form: shm/tables/selection_table_text.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shm/tables/table_words.h"

namespace ohio {

// The MPI functions a table row names.
enum class SelectedFunction : uint32_t { kAlltoall, kAlltoallv, kAlltoallw, kIalltoall, kIalltoallv };
constexpr uint32_t kSelectedFunctionCount = 5;
const char* SelectedFunctionName(SelectedFunction f);
std::optional<SelectedFunction> ParseSelectedFunction(const std::string& name);

// The daemons' transport among nodes, as JoinReply names it ("tcp", "verbs").
enum class SelectedTransport : uint32_t { kTcp, kVerbs };
const char* SelectedTransportName(SelectedTransport t);
std::optional<SelectedTransport> ParseSelectedTransport(const std::string& name);

// What a call looks like to the table: the communicator's nodes, the most ranks it has on one
// node, and the daemons' transport.
struct SelectionShape {
  uint32_t nodes = 1;
  uint32_t ppn = 1;
  SelectedTransport transport = SelectedTransport::kTcp;
};

// One row: calls of the functions in `functions` (a bit per SelectedFunction) whose shape and
// bytes per rank pair fall in its ranges go through ohio (`serve`) or to the library.
struct SelectionRule {
  uint32_t functions = (1u << kSelectedFunctionCount) - 1;
  TableRange nodes{1, UINT64_MAX};
  TableRange ppn{1, UINT64_MAX};
  std::optional<SelectedTransport> transport;  // none: any
  TableRange bytes{0, UINT64_MAX};
  bool serve = true;
  bool simulated = false;  // proposed by ohio-sim, not measured (shm/tables/table_words.h)
};

// The first row matching a call wins; a call no row matches goes to the library.
struct SelectionTable {
  std::vector<SelectionRule> rules;
};

// The table ohiod hands out when its configuration names none (shm/tables/selection_table.cc says
// where its rows were measured).
SelectionTable DefaultSelectionTable();

// The verdict for one call and the row that gave it (-1: none matched, the library).
struct Selection {
  bool serve = false;
  int rule = -1;
};
Selection Select(const SelectionTable& table, SelectedFunction function, const SelectionShape& shape,
                 uint64_t bytes_per_pair);

// The verdict for `function` on `shape` when it is the same whatever the bytes; none when the
// bytes decide. MPI_Alltoallv's and MPI_Alltoallw's bytes differ between ranks: where the table
// does not depend on them, the ranks still decide alike without a word; where it does, a rank
// whose own bytes say "library" must tell the others (it opts out of the call through ohio).
std::optional<bool> SelectionWhateverTheBytes(const SelectionTable& table, SelectedFunction function,
                                              const SelectionShape& shape);

}  // namespace ohio
