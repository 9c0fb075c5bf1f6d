#include "tests/harness/selection_tables.h"

#include <gtest/gtest.h>

#include "shm/tables/selection_table_text.h"

namespace ohio::testing {

std::string CanonicalSelectionTable(const std::string& text) {
  auto parsed = ParseSelectionTable(text, "test");
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  return parsed.ok() ? FormatSelectionTable(parsed.value()) : "";
}

std::string SelectionTableDigestOf(const std::string& text) {
  auto parsed = ParseSelectionTable(text, "test");
  return parsed.ok() ? SelectionTableDigest(parsed.value()) : "";
}

}  // namespace ohio::testing
