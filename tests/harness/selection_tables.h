// A selection table file's text as the daemons hand it out and compare it: for tests that write a
// table and check what a rank, a client or ohioctl was given.
#pragma once

#include <string>

namespace ohio::testing {

// The canonical text of a table's rows (what ohiod hands a client); "" (with a gtest failure) if
// it does not parse.
std::string CanonicalSelectionTable(const std::string& text);
// Its digest as ohiod and ohioctl show it; "" if it does not parse.
std::string SelectionTableDigestOf(const std::string& text);

}  // namespace ohio::testing
