#include "tests/harness/selection_tables.h"

#include <signal.h>

#include <gtest/gtest.h>

#include <fstream>

#include "shm/tables/selection_table_text.h"
#include "tests/harness/cluster.h"
#include "tests/harness/wait_until.h"

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

bool ReloadSelectionTable(const Daemon& daemon, const std::string& file, const std::string& text) {
  std::ofstream(file) << text;
  if (kill(daemon.pid(), SIGHUP) != 0) return false;
  const std::string digest = SelectionTableDigestOf(text);
  return WaitUntil(
      [&] {
        const StatusQuery q = QueryStatus(daemon.admin_socket());
        return q.ok && q.reply.selection_table_digest() == digest;
      },
      std::chrono::seconds(10));
}

}  // namespace ohio::testing
