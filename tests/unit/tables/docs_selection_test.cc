// README.md and docs/ARCHITECTURE.md say which calls the built-in selection table serves. The
// sentence each holds is rendered here from DefaultSelectionTable() itself, row by row, so a
// table that changes fails this test until the docs say what the code does.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "shm/tables/selection_table.h"
#include "tests/harness/process.h"

namespace ohio {
namespace {

// "4 KiB", "512 B": how the docs write a byte size.
std::string Bytes(uint64_t b) {
  const std::string t = FormatTableBytes(b);
  const size_t unit = t.find_first_not_of("0123456789");
  return unit == std::string::npos ? t + " B" : t.substr(0, unit) + " " + t.substr(unit);
}

// "`MPI_Alltoall`, `MPI_Alltoallv` and `MPI_Alltoallw`".
std::string Functions(uint32_t bits) {
  std::vector<std::string> names;
  for (uint32_t f = 0; f < kSelectedFunctionCount; ++f) {
    if (bits & (1u << f)) {
      std::string n = SelectedFunctionName(static_cast<SelectedFunction>(f));
      n[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(n[0])));
      names.push_back("`MPI_" + n + "`");
    }
  }
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

// One served row: "<functions> across nodes up to 4 KiB per rank pair", "... on one node from
// 512 B to 16 KiB per rank pair".
std::string Row(const SelectionRule& r) {
  EXPECT_TRUE(r.serve);
  EXPECT_FALSE(r.transport.has_value());
  EXPECT_EQ(r.ppn.min, 1u);
  EXPECT_EQ(r.ppn.max, UINT64_MAX);
  std::string where;
  if (r.nodes.min == 1 && r.nodes.max == 1) {
    where = "on one node";
  } else {
    EXPECT_EQ(r.nodes.min, 2u);
    EXPECT_EQ(r.nodes.max, UINT64_MAX);
    where = "across nodes";
  }
  EXPECT_NE(r.bytes.max, UINT64_MAX);
  const std::string range =
      r.bytes.min == 0 ? "up to " + Bytes(r.bytes.max) : "from " + Bytes(r.bytes.min) + " to " + Bytes(r.bytes.max);
  return Functions(r.functions) + " " + where + " " + range + " per rank pair";
}

std::string TheSentence() {
  std::string out;
  for (const SelectionRule& r : DefaultSelectionTable().rules) out += (out.empty() ? "" : "; ") + Row(r);
  return out;
}

// The file's text with every run of white space (line breaks included) as one space.
std::string Flowed(const std::string& runfile) {
  std::ifstream in(testing::RunfilePath(runfile));
  EXPECT_TRUE(in.good()) << runfile;
  std::stringstream words;
  std::string word, out;
  words << in.rdbuf();
  while (words >> word) out += (out.empty() ? "" : " ") + word;
  return out;
}

TEST(DocsSelection, TheSentenceRendersEveryRow) {
  EXPECT_EQ(TheSentence(),
            "`MPI_Alltoall`, `MPI_Alltoallv` and `MPI_Alltoallw` across nodes up to 4 KiB per rank pair; "
            "`MPI_Alltoall`, `MPI_Alltoallv` and `MPI_Alltoallw` on one node from 512 B to 16 KiB per rank pair; "
            "`MPI_Ialltoall` and `MPI_Ialltoallv` across nodes up to 32 KiB per rank pair; "
            "`MPI_Ialltoall` and `MPI_Ialltoallv` on one node from 32 KiB to 256 KiB per rank pair");
}

TEST(DocsSelection, ReadmeSaysWhatTheBuiltInTableServes) {
  EXPECT_NE(Flowed("README.md").find(TheSentence()), std::string::npos) << TheSentence();
}

TEST(DocsSelection, ArchitectureSaysWhatTheBuiltInTableServes) {
  EXPECT_NE(Flowed("docs/ARCHITECTURE.md").find(TheSentence()), std::string::npos) << TheSentence();
}

}  // namespace
}  // namespace ohio
