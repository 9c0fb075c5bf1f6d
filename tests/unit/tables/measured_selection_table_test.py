"""deploy/lib/selection_table.py, run as deploy/measure-selection.sh runs it (/usr/bin/python3,
a CSV in, the table out): from made-up latencies, which sizes become ohio's rows and which the
library keeps, at the threshold exactly, with noisy runs, with no win at all, and what bad input
gets."""
import os
import subprocess
import unittest

SCRIPT = os.path.join(os.environ.get("TEST_SRCDIR", ""), os.environ.get("TEST_WORKSPACE", ""),
                      "deploy/lib/selection_table.py")
HEADER = "function,bytes,variant,run,latency_us\n"


def csv_of(rows):
    """rows: (function, bytes, [ohio latencies], [mpi latencies]) -> the CSV, runs numbered."""
    lines = [HEADER]
    for function, size, ohio, mpi in rows:
        for run, latency in enumerate(ohio):
            lines.append("%s,%d,ohio,%d,%s\n" % (function, size, run, latency))
        for run, latency in enumerate(mpi):
            lines.append("%s,%d,mpi,%d,%s\n" % (function, size, run, latency))
    return "".join(lines)


def run(csv_text, *args):
    argv = ["/usr/bin/python3", SCRIPT, "--nodes", "2", "--ppn", "2", "--transport", "tcp"] + list(args)
    return subprocess.run(argv, input=csv_text, capture_output=True, text=True, timeout=30)


def rows(table):
    """The table's rows (not comments), each split into its columns."""
    return [line.split() for line in table.splitlines() if line and not line.startswith("#")]


FALLBACK = ["alltoall", "any", "any", "any", "512-4KiB", "ohio"]


def ohio_row(sizes, function="alltoall"):
    """A row giving ohio these sizes for the shape the tests measure: 2 nodes x 2, tcp."""
    return [function, "2", "2", "tcp", sizes, "ohio"]


def library_row(function):
    """The row closing the measured shape's other sizes to the fallback."""
    return [function, "2", "2", "tcp", "any", "mpi"]


class SelectionTableTest(unittest.TestCase):
    def assert_rows_then_fallback(self, table, *expected):
        self.assertEqual(rows(table), list(expected) + [FALLBACK])

    def table(self, csv_text, *args):
        done = run(csv_text, *args)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stderr, "")
        return done.stdout

    def test_wins_in_the_middle_make_one_row_for_the_measured_shape(self):
        out = self.table(csv_of([
            ("alltoall", 64, [12], [10]),
            ("alltoall", 128, [5], [10]),
            ("alltoall", 256, [6], [10]),
            ("alltoall", 512, [7], [10]),
            ("alltoall", 1024, [11], [10]),
        ]))
        self.assert_rows_then_fallback(out, ohio_row("128-512"), library_row("alltoall"))
        # The preamble the parser documents, and why each size went where it went.
        self.assertTrue(out.startswith("# ohio selection table: which calls ohio serves"))
        self.assertIn("# function   nodes  ppn  transport  bytes        path\n", out)
        self.assertRegex(out, r"#   alltoall +128  runs 1/1  ohio +5.00  mpi +10.00  ratio +0.500  ohio\n")
        self.assertRegex(out, r"#   alltoall +1024  runs 1/1  ohio +11.00  mpi +10.00  ratio +1.100  mpi\n")

    def test_a_ratio_at_the_threshold_is_a_win_and_just_above_is_not(self):
        out = self.table(csv_of([
            ("alltoall", 1024, ["9.5"], ["10"]),       # 0.95 exactly
            ("alltoall", 2048, ["9.5001"], ["10"]),    # 0.95001
            ("alltoall", 4096, ["19"], ["20"]),        # 0.95 exactly again
        ]))
        self.assertEqual(rows(out)[:2], [
            ohio_row("1KiB"),
            ohio_row("4KiB"),
        ])
        # --win-ratio moves the threshold.
        out = self.table(csv_of([("alltoall", 1024, ["9.5"], ["10"])]), "--win-ratio", "0.9")
        self.assertEqual(rows(out)[0], library_row("alltoall"))

    def test_medians_over_runs_ignore_one_noisy_run(self):
        out = self.table(csv_of([
            # ohio's median 8 (one run stalled), the library's 10: ohio's.
            ("alltoall", 64, [8, 900, 7], [10, 10, 11]),
            # the library's one fast run does not make it win: median 10 against ohio's 9.
            ("alltoall", 128, [9, 9, 9], [1, 10, 12]),
            # even run counts: median = mean of the middle two, (9 + 10) / 2 = 9.5 against 10.
            ("alltoall", 256, [8, 9, 10, 40], [10, 10, 10, 10]),
        ]))
        self.assertEqual(rows(out)[0], ohio_row("64-256"))
        self.assertRegex(out, r"alltoall +64  runs 3/3  ohio +8.00  mpi +10.00")
        self.assertRegex(out, r"alltoall +256  runs 4/4  ohio +9.50  mpi +10.00  ratio +0.950  ohio")

    def test_no_wins_leave_no_ohio_row(self):
        out = self.table(csv_of([
            ("alltoall", 64, [10], [10]),      # a tie: the library keeps it
            ("alltoall", 128, [20], [10]),
            ("ialltoall", 4096, [30], [10]),
        ]))
        self.assert_rows_then_fallback(out, library_row("alltoall"), library_row("ialltoall"))
        self.assertRegex(out, r"alltoall +64  runs 1/1  ohio +10.00  mpi +10.00  ratio +1.000  mpi")

    def test_a_range_never_spans_sizes_nobody_measured(self):
        out = self.table(csv_of([
            ("alltoall", 64, [1], [10]),
            ("alltoall", 65536, [1], [10]),
        ]))
        self.assertEqual(rows(out)[:2], [
            ohio_row("64"),
            ohio_row("64KiB"),
        ])

    def test_functions_keep_their_own_rows_and_sizes_in_units(self):
        out = self.table(csv_of([
            ("ialltoall", 4096, [1], [10]),
            ("ialltoall", 8192, [1], [10]),
            ("alltoall", 512, [1], [10]),
            ("alltoall", 1 << 20, [1], [10]),
            ("alltoall", 1 << 21, [1], [10]),
        ]), "--comment", "command: deploy/measure-selection.sh --runs 1", "--comment", "")
        self.assert_rows_then_fallback(out, ohio_row("4KiB-8KiB", "ialltoall"), ohio_row("512"), ohio_row("1MiB-2MiB"),
                                       library_row("ialltoall"), library_row("alltoall"))
        self.assertIn("\n# command: deploy/measure-selection.sh --runs 1\n#\n", out)

    def test_a_size_measured_one_way_only_is_the_librarys(self):
        out = self.table(HEADER + "alltoall,64,ohio,0,1\nalltoall,128,ohio,0,1\nalltoall,128,mpi,0,10\n")
        self.assertEqual(rows(out)[0], ohio_row("128"))
        self.assertRegex(out, r"alltoall +64  runs 1/0  ohio +1.00  mpi +-  ratio +-  mpi \(not measured both ways\)")

    def test_bad_input_gets_a_message_naming_the_line_and_no_table(self):
        cases = [
            ("bytes,function\n", "line 1: the header must be function,bytes,variant,run,latency_us"),
            (HEADER + "alltoall,64,ohio,0,1\nalltoall,64,openmpi,0,1\n",
             "line 3: variant 'openmpi' is neither ohio nor mpi"),
            (HEADER + "alltoallx,64,ohio,0,1\n", "line 2: function 'alltoallx' is none of"),
            (HEADER + "alltoall,0,ohio,0,1\n", "line 2: bytes '0' is not a positive integer"),
            (HEADER + "alltoall,64,ohio,0,fast\n", "line 2: latency_us 'fast' is not a number"),
            (HEADER + "alltoall,64,ohio,0\n", "line 2: 5 fields expected, got 4"),
            (HEADER, "no measurements in the CSV"),
        ]
        for text, message in cases:
            with self.subTest(message=message):
                done = run(text)
                self.assertEqual(done.returncode, 2)
                self.assertEqual(done.stdout, "")
                self.assertIn("selection_table.py: " + message, done.stderr)
        done = run(csv_of([("alltoall", 64, [1], [2])]), "--win-ratio", "-1")
        self.assertEqual((done.returncode, done.stdout), (2, ""))
        self.assertIn("--win-ratio must be above 0", done.stderr)


if __name__ == "__main__":
    unittest.main()
