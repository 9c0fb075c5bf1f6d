// ohio-plan --select's verdict lines say what the client does with each function
// (client/mpi/call_selection.h): a vector call's verdict taken from each rank's own bytes where
// the table's verdict depends on them, except MPI_Ialltoallv, which no rank can opt out of alone,
// so every call of it goes to the MPI library there.
#include <gtest/gtest.h>

#include <string>

#include "client/ohio_plan/selection_report.h"
#include "shm/tables/selection_table.h"
#include "shm/tables/selection_table_text.h"

namespace ohio {
namespace {

std::string LineOf(const std::string& report, const std::string& function) {
  const size_t at = report.find("\n  " + function + " ");
  if (at == std::string::npos) return "";
  return report.substr(at + 1, report.find('\n', at + 1) - at - 1);
}

TEST(SelectionReport, IalltoallvWhoseVerdictDependsOnTheBytesGoesToTheLibrary) {
  const std::string report = RenderSelection(DefaultSelectionTable(), "the built-in table",
                                             SelectionShape{4, 2, SelectedTransport::kTcp}, 64);
  EXPECT_EQ(LineOf(report, "ialltoallv"),
            "  ialltoallv  the MPI library, every call: the table's verdict depends on the bytes, which may differ "
            "between ranks")
      << report;
  EXPECT_NE(LineOf(report, "alltoallv").find("ohio (row 1:"), std::string::npos) << report;
  EXPECT_NE(LineOf(report, "alltoallv").find("each rank decides by its own bytes"), std::string::npos) << report;
  EXPECT_NE(LineOf(report, "ialltoall").find("ohio (row 3:"), std::string::npos) << report;
}

TEST(SelectionReport, IalltoallvServedWhateverTheBytes) {
  auto table = ParseSelectionTable("ialltoallv 2+ any any any ohio\n", "test");
  ASSERT_TRUE(table.ok()) << table.status().message();
  const std::string report = RenderSelection(table.value(), "test", SelectionShape{4, 2, SelectedTransport::kTcp}, 64);
  EXPECT_NE(LineOf(report, "ialltoallv").find("ohio (row 1:"), std::string::npos) << report;
  EXPECT_NE(LineOf(report, "ialltoallv").find("; whatever each rank's bytes"), std::string::npos) << report;
}

}  // namespace
}  // namespace ohio
