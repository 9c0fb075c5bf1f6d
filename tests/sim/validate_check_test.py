"""sim/validate_check.py, run as sim/validate.sh runs it: small fixed CSVs of measured medians (in
deploy/local-cluster.sh's and deploy/mpi-compare.sh's format) and of simulated times in, the
ratios, the rule each pair is held to and its verdict out; the exit status with and without
--strict; and what bad input gets. No simulation, no timing."""
import os
import subprocess
import tempfile
import unittest

SCRIPT = os.path.join(os.environ.get("TEST_SRCDIR", ""), os.environ.get("TEST_WORKSPACE", ""),
                      "sim/validate_check.py")
MEASURED_HEADER = ("method,bytes,runs,latency_us_median,baseline,ratio,cpu_us_per_call,"
                   "ctx_switches_per_call,frames_per_call_per_node,daemon_frames_per_call_per_node\n")

# deploy/local-cluster.sh at 4 x 2: v3 clearly wins at 1 B (0.5), ties at 4096 B (1.0); v1
# clearly loses at 1 B (2.0).
LOCAL_CLUSTER = MEASURED_HEADER + """\
v1,1,3,200.0,flat,2.00,-,-,-,-
v3,1,3,50.0,flat,0.50,-,-,-,-
flat,1,3,100.0,-,-,-,-,-,-
v3,4096,3,300.0,flat,1.00,-,-,-,-
flat,4096,3,300.0,-,-,-,-,-,-
"""

# deploy/mpi-compare.sh at 16 x 1: ohio clearly wins against Open MPI and near-ties with MPICH;
# ompi+hypercube is one forced algorithm, not simulated.
MPI_COMPARE = MEASURED_HEADER + """\
ompi,1024,3,400.0,-,-,-,-,-,-
ompi+ohio,1024,3,200.0,ompi,0.50,-,-,-,-
ompi+hypercube,1024,3,180.0,ompi,0.45,-,-,-,-
mpich,1024,3,250.0,-,-,-,-,-,-
mpich+ohio,1024,3,275.0,mpich,1.10,-,-,-,-
"""

SIMULATED = """shape,source,bytes,time_us
4x2,ohio_v1,1,30.0
4x2,ohio_v3,1,10.0
4x2,smpi_pair,1,20.0
4x2,ohio_v3,4096,130.0
4x2,smpi_pair,4096,100.0
16x1,ohio_v3,1024,90.0
16x1,smpi_ompi,1024,100.0
16x1,smpi_mpich,1024,200.0
"""


class ValidateCheckTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_check(self, *args):
        argv = ["/usr/bin/python3", SCRIPT] + list(args)
        return subprocess.run(argv, capture_output=True, text=True, timeout=30)

    def standard_args(self):
        return ["--simulated", self.write("simulated.csv", SIMULATED),
                "--measured", "4x2=" + self.write("local.csv", LOCAL_CLUSTER),
                "--measured", "16x1=" + self.write("mpi.csv", MPI_COMPARE)]

    def test_ratios_rules_and_verdicts(self):
        out = os.path.join(self.dir.name, "validation.csv")
        result = self.run_check(*self.standard_args(), "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(out) as f:
            rows = [line.rstrip("\n").split(",") for line in f]
        self.assertEqual(rows, [
            ["shape", "method", "baseline", "bytes", "measured_ratio", "simulated_ratio", "rule", "check"],
            # clear losses and wins must keep their side of 1: 2.0 against 1.5 passes, 0.5 against 0.5 too
            ["4x2", "v1", "flat", "1", "2.000", "1.500", "same side of 1", "pass"],
            ["4x2", "v3", "flat", "1", "0.500", "0.500", "same side of 1", "pass"],
            # a tie (1.0) predicted at 1.3: within 35%
            ["4x2", "v3", "flat", "4096", "1.000", "1.300", "within 35%", "pass"],
            # near tie 1.1 predicted at 0.45: 59% off
            ["16x1", "mpich+ohio", "mpich", "1024", "1.100", "0.450", "within 35%", "FAIL"],
            ["16x1", "ompi+hypercube", "ompi", "1024", "0.450", "-", "-", "not simulated"],
            # a clear win (0.5) predicted as 0.9: still below 1
            ["16x1", "ompi+ohio", "ompi", "1024", "0.500", "0.900", "same side of 1", "pass"],
        ])
        self.assertIn("checks: 4 passed, 1 failed, 1 not checked", result.stdout)

    def test_strict_exits_one_on_a_failed_check(self):
        result = self.run_check(*self.standard_args(), "--strict")
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("FAIL", result.stdout)

    def test_a_clear_win_predicted_as_a_loss_fails(self):
        simulated = SIMULATED.replace("4x2,ohio_v3,1,10.0", "4x2,ohio_v3,1,25.0")
        result = self.run_check("--simulated", self.write("s.csv", simulated),
                                "--measured", "4x2=" + self.write("l.csv", LOCAL_CLUSTER), "--strict")
        self.assertEqual(result.returncode, 1)
        self.assertRegex(result.stdout, r"4x2\s+v3\s+flat\s+1\s+0\.500\s+1\.250\s+same side of 1\s+FAIL")

    def test_a_size_not_simulated_is_reported_not_failed(self):
        result = self.run_check("--simulated", self.write("s.csv", "shape,source,bytes,time_us\n"),
                                "--measured", "4x2=" + self.write("l.csv", LOCAL_CLUSTER), "--strict")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("no simulation of 4x2 at 4096", result.stdout)
        self.assertIn("checks: 0 passed, 0 failed, 3 not checked", result.stdout)

    def test_bad_input_names_the_file_and_line(self):
        bad_time = self.write("s.csv", "shape,source,bytes,time_us\n4x2,ohio_v3,1,fast\n")
        result = self.run_check("--simulated", bad_time)
        self.assertEqual(result.returncode, 2)
        self.assertIn("s.csv:2: 'fast' is not a number", result.stderr)

        no_column = self.write("m.csv", "method,bytes,latency_us\nv3,1,5\n")
        result = self.run_check("--simulated", self.write("ok.csv", SIMULATED), "--measured", "4x2=" + no_column)
        self.assertEqual(result.returncode, 2)
        self.assertIn("m.csv:1: no column latency_us_median, baseline", result.stderr)

        result = self.run_check("--simulated", self.write("ok.csv", SIMULATED), "--measured", "four=" + no_column)
        self.assertEqual(result.returncode, 2)
        self.assertIn("'four' is not a shape KxP", result.stderr)

        result = self.run_check("--simulated", os.path.join(self.dir.name, "missing.csv"))
        self.assertEqual(result.returncode, 2)
        self.assertIn("missing.csv: No such file or directory", result.stderr)


if __name__ == "__main__":
    unittest.main()
