// A selection table file's text as the daemons hand it out and compare it: for tests that write a
// table and check what a rank, a client or ohioctl was given.
#pragma once

#include <string>

#include "tests/harness/daemon_fixture.h"

namespace ohio::testing {

// The canonical text of a table's rows (what ohiod hands a client); "" (with a gtest failure) if
// it does not parse.
std::string CanonicalSelectionTable(const std::string& text);
// Its digest as ohiod and ohioctl show it; "" if it does not parse.
std::string SelectionTableDigestOf(const std::string& text);

// Writes `text` to the daemon's selection-table `file` and reloads it (SIGHUP): true once ohiod's
// status shows the table's digest as the one new groups get (at once for the table in force),
// false after 10 s.
bool ReloadSelectionTable(const Daemon& daemon, const std::string& file, const std::string& text);

}  // namespace ohio::testing
