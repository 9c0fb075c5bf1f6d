// The selection table: its text form (errors name the line and the column), the verdict at the
// edges of its rows, the rows that do not depend on a vector call's bytes, and the digest the
// nodes of a group compare at setup.
#include <gtest/gtest.h>

#include "shm/tables/selection_table.h"
#include "shm/tables/selection_table_text.h"

namespace ohio {
namespace {

using F = SelectedFunction;
constexpr uint64_t KiB = 1024;

SelectionTable Parse(const std::string& text) {
  auto t = ParseSelectionTable(text, "t");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? t.value() : SelectionTable{};
}

std::string Error(const std::string& text) {
  auto t = ParseSelectionTable(text, "/etc/ohio/selection.table");
  return t.ok() ? "parsed" : t.status().message();
}

SelectionShape Shape(uint32_t nodes, uint32_t ppn, SelectedTransport transport = SelectedTransport::kTcp) {
  return SelectionShape{nodes, ppn, transport};
}

TEST(SelectionTableText, ParsesRowsCommentsAndUnitsIntoCanonicalLines) {
  const SelectionTable t = Parse(
      "# function  nodes  ppn  transport  bytes  path\n"
      "alltoall    2+     any  tcp        1-4KiB ohio   # measured\n"
      "\n"
      "  alltoall,alltoallv 1 4 any 512-16384 ohio\n"
      "ialltoall any 2-8 verbs 4096+ ohio\n"
      "any 3 any any any mpi\n");
  ASSERT_EQ(t.rules.size(), 4u);
  EXPECT_EQ(FormatSelectionTable(t),
            "alltoall 2+ any tcp 1-4KiB ohio\n"
            "alltoall,alltoallv 1 4 any 512-16KiB ohio\n"
            "ialltoall any 2-8 verbs 4KiB+ ohio\n"
            "any 3 any any any mpi\n");
  EXPECT_TRUE(Parse("# only comments\n\n").rules.empty());
  // What FormatSelectionTable prints parses back to itself.
  EXPECT_EQ(FormatSelectionTable(Parse(FormatSelectionTable(t))), FormatSelectionTable(t));
  EXPECT_EQ(FormatSelectionTable(Parse(FormatSelectionTable(DefaultSelectionTable()))),
            FormatSelectionTable(DefaultSelectionTable()));
}

TEST(SelectionTableText, ErrorsNameTheFileTheLineAndWhatWasExpected) {
  EXPECT_EQ(Error("alltoall 2+ any tcp 1KiB\n"),
            "selection table /etc/ohio/selection.table:1: expected 'function nodes ppn transport bytes path' (e.g. "
            "'alltoall 2+ any tcp 1-4KiB ohio'), got 5 words");
  EXPECT_EQ(Error("# c\nalltoal 2+ any tcp 1KiB ohio\n"),
            "selection table /etc/ohio/selection.table:2: unknown function 'alltoal' (alltoall, alltoallv, alltoallw, "
            "ialltoall, ialltoallv or any)");
  EXPECT_EQ(Error("alltoall 0 any tcp 1KiB ohio\n"),
            "selection table /etc/ohio/selection.table:1: expected nodes as N, N-M, N+ or any (N >= 1), got '0'");
  EXPECT_EQ(Error("alltoall 8-2 any tcp 1KiB ohio\n"),
            "selection table /etc/ohio/selection.table:1: the nodes range 8-2 is empty");
  EXPECT_EQ(Error("alltoall 2 x tcp 1KiB ohio\n"),
            "selection table /etc/ohio/selection.table:1: expected ppn as N, N-M, N+ or any (N >= 1), got 'x'");
  EXPECT_EQ(Error("alltoall 2 1 udp 1KiB ohio\n"),
            "selection table /etc/ohio/selection.table:1: unknown transport 'udp' (tcp, verbs or any)");
  EXPECT_EQ(Error("alltoall 2 1 tcp 1KB ohio\n"),
            "selection table /etc/ohio/selection.table:1: expected bytes as N, N-M, N+ or any (N >= 0), got '1KB'");
  EXPECT_EQ(Error("alltoall 2 1 tcp 4KiB-any ohio\n"),
            "selection table /etc/ohio/selection.table:1: expected bytes as N, N-M, N+ or any (N >= 0), got "
            "'4KiB-any'");
  EXPECT_EQ(Error("alltoall 2 1 tcp 1KiB library\n"),
            "selection table /etc/ohio/selection.table:1: unknown path 'library' (ohio: served through ohio; mpi: "
            "handed to the MPI library)");
}

// A row ohio-sim proposed ends with the marker: it decides as any row and keeps the marker
// through the canonical form ohiod hands the ranks; a seventh word that is not it is refused.
TEST(SelectionTableText, SimulatedRowsCarryTheirMarker) {
  const SelectionTable t = Parse("alltoall 64-4096 32 any 1-4KiB ohio simulated\nalltoall any any any any mpi\n");
  ASSERT_EQ(t.rules.size(), 2u);
  EXPECT_TRUE(t.rules[0].simulated);
  EXPECT_FALSE(t.rules[1].simulated);
  EXPECT_EQ(FormatSelectionTable(t), "alltoall 64-4096 32 any 1-4KiB ohio simulated\nalltoall any any any any mpi\n");
  EXPECT_EQ(FormatSelectionTable(Parse(FormatSelectionTable(t))), FormatSelectionTable(t));
  EXPECT_EQ(Error("alltoall 64+ 32 any 1-4KiB ohio measured\n"),
            "selection table /etc/ohio/selection.table:1: expected 'simulated' after the 6 columns (the marker of a "
            "row ohio-sim proposed), got 'measured'");
}

TEST(SelectionTable, FirstMatchingRowWinsAndNoneMeansTheLibrary) {
  const SelectionTable t = Parse(
      "alltoall 2+ any tcp 0-4KiB ohio\n"
      "alltoall 4 any any 0-1MiB mpi\n"
      "alltoall 1 4 any 512-16KiB ohio\n"
      "ialltoall any any any 4KiB+ ohio\n");
  // Row 0's edges.
  EXPECT_TRUE(Select(t, F::kAlltoall, Shape(2, 2), 0).serve);
  EXPECT_EQ(Select(t, F::kAlltoall, Shape(4, 2), 4 * KiB).rule, 0);
  EXPECT_TRUE(Select(t, F::kAlltoall, Shape(4, 2), 4 * KiB).serve);
  // Past it, row 1 hands 4 nodes to the library; 3 nodes match nothing: the library too.
  EXPECT_EQ(Select(t, F::kAlltoall, Shape(4, 2), 4 * KiB + 1).rule, 1);
  EXPECT_FALSE(Select(t, F::kAlltoall, Shape(4, 2), 4 * KiB + 1).serve);
  EXPECT_EQ(Select(t, F::kAlltoall, Shape(3, 2), 4 * KiB + 1).rule, -1);
  EXPECT_FALSE(Select(t, F::kAlltoall, Shape(3, 2), 4 * KiB + 1).serve);
  // The transport counts: verbs matches no tcp row.
  EXPECT_EQ(Select(t, F::kAlltoall, Shape(2, 2, SelectedTransport::kVerbs), 64).rule, -1);
  // One node: ppn exactly 4, bytes 512 to 16 KiB.
  EXPECT_FALSE(Select(t, F::kAlltoall, Shape(1, 4), 511).serve);
  EXPECT_TRUE(Select(t, F::kAlltoall, Shape(1, 4), 512).serve);
  EXPECT_TRUE(Select(t, F::kAlltoall, Shape(1, 4), 16 * KiB).serve);
  EXPECT_FALSE(Select(t, F::kAlltoall, Shape(1, 4), 16 * KiB + 1).serve);
  EXPECT_FALSE(Select(t, F::kAlltoall, Shape(1, 3), 1 * KiB).serve);
  // Functions are told apart.
  EXPECT_FALSE(Select(t, F::kAlltoallv, Shape(2, 2), 64).serve);
  EXPECT_FALSE(Select(t, F::kIalltoall, Shape(1, 2), 4 * KiB - 1).serve);
  EXPECT_TRUE(Select(t, F::kIalltoall, Shape(1, 2), 4 * KiB).serve);
  EXPECT_TRUE(Select(t, F::kIalltoall, Shape(64, 2), UINT64_MAX - 1).serve);
  // An empty table serves nothing.
  EXPECT_EQ(Select(SelectionTable{}, F::kAlltoall, Shape(2, 2), 64).rule, -1);
}

TEST(SelectionTable, AVerdictWhateverTheBytesOnlyWhereNoRowSplitsThem) {
  const SelectionTable t = Parse(
      "alltoallv 2+ any any 0-4KiB ohio\n"
      "alltoallv 8+ any any any ohio\n"
      "alltoallw any any any any mpi\n"
      "ialltoallv 1 any any any ohio\n"
      "ialltoallv 2 any any 0-1KiB mpi\n"
      "ialltoallv 2 any any any mpi\n");
  // Split at 4 KiB: the bytes decide.
  EXPECT_EQ(SelectionWhateverTheBytes(t, F::kAlltoallv, Shape(2, 2)), std::nullopt);
  // 8 nodes: row 0 serves to 4 KiB, row 1 serves the rest: served whatever the bytes.
  EXPECT_EQ(SelectionWhateverTheBytes(t, F::kAlltoallv, Shape(8, 2)), std::optional<bool>(true));
  // One node: nothing matches alltoallv at all: the library whatever the bytes.
  EXPECT_EQ(SelectionWhateverTheBytes(t, F::kAlltoallv, Shape(1, 2)), std::optional<bool>(false));
  EXPECT_EQ(SelectionWhateverTheBytes(t, F::kAlltoallw, Shape(4, 2)), std::optional<bool>(false));
  EXPECT_EQ(SelectionWhateverTheBytes(t, F::kIalltoallv, Shape(1, 2)), std::optional<bool>(true));
  // Two rows that agree are uniform too.
  EXPECT_EQ(SelectionWhateverTheBytes(t, F::kIalltoallv, Shape(2, 2)), std::optional<bool>(false));
  // The default table's alltoallv across nodes depends on the bytes; its ialltoallv up to 32 KiB too.
  EXPECT_EQ(SelectionWhateverTheBytes(DefaultSelectionTable(), F::kAlltoallv, Shape(4, 2)), std::nullopt);
}

TEST(SelectionTableDigest, SameRowsSameDigestWhateverTheSpelling) {
  const std::string a = SelectionTableDigest(Parse("alltoall 2+ any tcp 1-4KiB ohio\n"));
  EXPECT_EQ(a.size(), 16u);
  EXPECT_EQ(a, SelectionTableDigest(Parse("# measured\n alltoall\t2+ any  tcp 1-4096 ohio # same\n")));
  EXPECT_NE(a, SelectionTableDigest(Parse("alltoall 2+ any tcp 1-8KiB ohio\n")));
  EXPECT_NE(a, SelectionTableDigest(Parse("alltoall 2+ any verbs 1-4KiB ohio\n")));
  EXPECT_NE(a, SelectionTableDigest(Parse("alltoall 2+ any tcp 1-4KiB mpi\n")));
  EXPECT_NE(a, SelectionTableDigest(Parse("alltoallv 2+ any tcp 1-4KiB ohio\n")));
  EXPECT_NE(a, SelectionTableDigest(SelectionTable{}));
  // Order matters: the first matching row wins.
  EXPECT_NE(SelectionTableDigest(Parse("alltoall any any any 0-4KiB ohio\nalltoall any any any any mpi\n")),
            SelectionTableDigest(Parse("alltoall any any any any mpi\nalltoall any any any 0-4KiB ohio\n")));
}

}  // namespace
}  // namespace ohio
