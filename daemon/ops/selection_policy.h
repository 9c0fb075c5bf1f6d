// The selection table a group's ranks decide by (shm/tables/selection_table.h): which calls ohio
// serves and which it hands to the MPI library. It comes from this node's `selection-table`
// file, else the built-in table. A group takes the table in force when it is created and keeps
// it (a SIGHUP that reads a new file changes the table of later groups only), and its nodes
// compare the digests at setup (daemon/peers/peer_bootstrap.h): every rank of a communicator
// must reach the same verdict without a word, which it does only from the same table.
#pragma once

#include <string>

#include "daemon/ops/config.h"
#include "shm/tables/selection_table.h"

namespace ohio {

struct SelectionPolicy {
  SelectionTable table;
  std::string source;  // for people: "the built-in table", "selection-table /etc/ohio/selection.table"
  std::string text;    // FormatSelectionTable(table): what ranks are handed
  std::string digest;  // SelectionTableDigest(table), TableDigest(text)
};

SelectionPolicy ChooseSelectionPolicy(const DaemonConfig& config);

}  // namespace ohio
