"""sim/smpi_overheads.py, run as sim/validate.sh runs it: an overheads file in, the settings
sim/smpi-alltoall.sh --cfg takes out, one a line; the shipped files read; bad input refused with
the file and line. No simulation."""
import os
import subprocess
import tempfile
import unittest

RUNFILES = os.path.join(os.environ.get("TEST_SRCDIR", ""), os.environ.get("TEST_WORKSPACE", ""))
SCRIPT = os.path.join(RUNFILES, "sim/smpi_overheads.py")
SHIPPED = ["sim/calibration/this-box-idle-smpi-cpu.txt", "sim/calibration/this-box-idle-smpi-socket.txt"]


class SmpiOverheadsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, text):
        path = os.path.join(self.dir.name, "overheads.txt")
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_script(self, path):
        return subprocess.run(["/usr/bin/python3", SCRIPT, path], capture_output=True, text=True, timeout=30)

    def test_settings_in_file_order_comments_dropped(self):
        result = self.run_script(self.write(
            "# a comment\n"
            "smpi/or 0:1.5e-6:0   # trailing comment\n"
            "\n"
            "smpi/os 0:2e-6:1e-10;65536:4e-6:0\n"))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout, "smpi/or:0:1.5e-6:0\nsmpi/os:0:2e-6:1e-10;65536:4e-6:0\n")

    def test_shipped_files_give_all_three_overheads(self):
        for shipped in SHIPPED:
            result = self.run_script(os.path.join(RUNFILES, shipped))
            self.assertEqual(result.returncode, 0, shipped + ": " + result.stderr)
            keys = sorted(line.split(":", 1)[0] for line in result.stdout.splitlines())
            self.assertEqual(keys, ["smpi/ois", "smpi/or", "smpi/os"], shipped)

    def test_bad_input_names_the_file_and_line(self):
        cases = [
            ("smpi/os 0:2e-6:0\nsmpi/lat 0:1:0\n",
             ":2: 'smpi/lat' is not one of smpi/os, smpi/ois, smpi/or"),
            ("smpi/os 2us\n", ":1: smpi/os '2us' is not SIZE:SECONDS:SECONDS_PER_BYTE[;...]"),
            ("smpi/os 0:-1e-6:0\n", ":1: smpi/os '0:-1e-6:0' is not SIZE:SECONDS:SECONDS_PER_BYTE[;...]"),
            ("smpi/or 0:1e-6:0\nsmpi/or 0:2e-6:0\n", ":2: smpi/or given twice"),
            ("smpi/os 0:1e-6:0 extra\n", ":1: expected 'key value', got 3 words"),
            ("# nothing\n", ": no setting (expected smpi/os, smpi/ois, smpi/or)"),
        ]
        for text, message in cases:
            path = self.write(text)
            result = self.run_script(path)
            self.assertEqual(result.returncode, 2, text)
            self.assertEqual(result.stdout, "", text)
            self.assertIn(path + message, result.stderr, text)

    def test_a_missing_file_is_refused(self):
        result = self.run_script(os.path.join(self.dir.name, "absent.txt"))
        self.assertEqual(result.returncode, 2)
        self.assertIn("absent.txt: cannot be read (No such file or directory)", result.stderr)


if __name__ == "__main__":
    unittest.main()
