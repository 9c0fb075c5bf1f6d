// ohio-sim on malformed input: a platform SimGrid cannot read, or a calibration file or count
// matrix that is wrong, gets an error naming the file and the line, and exit code 2, never a crash or a
// prediction made from half a file.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/harness/process.h"
#include "tests/sim/sim_runner.h"

namespace ohio::testing {
namespace {

constexpr int kUsageError = 2;

std::string Write(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.file(name);
  std::ofstream(path) << text;
  return path;
}

const char* const kPlatformHead =
    "<?xml version='1.0'?>\n"
    "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
    "<platform version=\"4.1\">\n"
    "  <zone id=\"z\" routing=\"Full\">\n";

SimRun RunWith(const std::string& platform, const std::string& calibration) {
  return RunOhioSim({"--platform", platform, "--calibration", calibration, "--nodes", "2", "--ppn", "1"});
}

void ExpectRefused(const SimRun& run, const std::string& says) {
  EXPECT_EQ(run.exit_code, kUsageError) << run.output;
  EXPECT_NE(run.output.find(says), std::string::npos) << "expected '" << says << "' in:\n" << run.output;
}

TEST(SimInputErrors, PlatformErrorsNameFileAndLine) {
  TempDir dir;
  const std::string bad_number = Write(dir, "bad-number.xml",
                                       std::string(kPlatformHead) +
                                           "    <host id=\"a\" speed=\"1Gf\"/>\n"
                                           "    <host id=\"b\" speed=\"fast\"/>\n"
                                           "  </zone>\n</platform>\n");
  ExpectRefused(RunWith(bad_number, ThisBoxCalibration()), bad_number + ":6");
  const std::string unclosed = Write(dir, "unclosed.xml",
                                     std::string(kPlatformHead) +
                                         "    <host id=\"a\" speed=\"1Gf\">\n"
                                         "  </zone>\n</platform>\n");
  ExpectRefused(RunWith(unclosed, ThisBoxCalibration()), unclosed + ":6");
  ExpectRefused(RunWith(dir.file("missing.xml"), ThisBoxCalibration()),
                dir.file("missing.xml") + ": cannot read the platform file");
  // Readable, but too small for the group asked for.
  const SimRun big = RunOhioSim({"--nodes", "33", "--ppn", "1"});
  ExpectRefused(big, "has 32 hosts, fewer than the 33 nodes asked for");
  // A call of 61 million rounds is refused before anything is simulated.
  ExpectRefused(RunOhioSim({"--nodes", "2", "--ppn", "2", "--bytes", "100000000000", "--ssb-bytes", "65536",
                            "--srb-bytes", "32768"}),
                "61035160 rounds to simulate, more than the 16777216 ohio-sim plays; try --max-slices 2");
}

TEST(SimInputErrors, CalibrationErrorsNameFileAndLine) {
  TempDir dir;
  struct Bad {
    std::string text;
    std::string says;  // after "<path>:"
  };
  const std::vector<Bad> bads = {
      {"copy_bandwidth_threads_1 1e9 B/s\n# fine so far\nhandoff_latency 2 ms\n", "3: handoff_latency is in s, not 'ms'"},
      {"copy_bandwidth_threads_1 fast B/s\n", "1: 'fast' is not a non-negative number"},
      {"copy_bandwidth_threads_1 1e9 B/s\ndaemon_round_cost -1 s\n", "2: '-1' is not a non-negative number"},
      {"copy_bandwidth_threads_1 1e9 B/s\nwarp_factor 9 s\n", "2: unknown key 'warp_factor'"},
      {"copy_bandwidth_threads_1 1e9\n", "1: expected 'key value unit', got 2 words"},
      {"copy_bandwidth_threads_0 1e9 B/s\n", "1: 'copy_bandwidth_threads_0': the thread count must be 1..1024"},
      {"copy_bandwidth_threads_1 1e9 B/s\ncopy_bandwidth_threads_1 2e9 B/s\n", "2: copy_bandwidth_threads_1 given twice"},
      {"copy_bandwidth_threads_1 0 B/s\n", "1: copy_bandwidth_threads_1 must be above 0"},
      {"qp_cache_entries 1.5 qps\ncopy_bandwidth_threads_1 1e9 B/s\n", "1: qp_cache_entries must be a whole number"},
      {"handoff_latency 1e-6 s\n", " no copy_bandwidth_threads_1 line"},
      {"copy_bandwidth_threads_2 1e9 B/s\n", " copy_bandwidth_threads_1 is missing"},
  };
  for (size_t i = 0; i < bads.size(); ++i) {
    SCOPED_TRACE(bads[i].text);
    const std::string path = Write(dir, "calibration-" + std::to_string(i) + ".txt", bads[i].text);
    ExpectRefused(RunWith(ThisBoxPlatform(), path), path + ":" + bads[i].says);
  }
  ExpectRefused(RunWith(ThisBoxPlatform(), dir.file("none.txt")), dir.file("none.txt") + ": cannot read");
}

// An alltoallv's count matrix (--counts): rows of the group's size, decimal counts; a generator
// spelled wrong is refused, not read as a file name that happens to be missing.
TEST(SimInputErrors, CountMatrixErrorsNameFileAndLine) {
  TempDir dir;
  auto run = [&](const std::string& counts) {
    return RunOhioSim({"--nodes", "2", "--ppn", "2", "--counts", counts});
  };
  const std::string short_row = Write(dir, "short.txt", "# counts\n1 2 3 4\n1 2 3\n1 2 3 4\n1 2 3 4\n");
  ExpectRefused(run(short_row), short_row + ":3: row of rank 1 has 3 counts; the group has 4 ranks");
  const std::string word = Write(dir, "word.txt", "1 2 3 4\n1 2 3 4\n1 2 x 4\n1 2 3 4\n");
  ExpectRefused(run(word), word + ":3: 'x' is not a byte count (decimal, at most 2^50)");
  const std::string extra = Write(dir, "extra.txt", "1 2 3 4\n1 2 3 4\n1 2 3 4\n1 2 3 4\n1 2 3 4\n");
  ExpectRefused(run(extra), extra + ":5: more than 4 rows: the group has 4 ranks");
  const std::string missing = Write(dir, "missing.txt", "1 2 3 4\n1,2,3,4\n");
  ExpectRefused(run(missing), missing + ": 2 rows; the group has 4 ranks");
  ExpectRefused(run("uniform:4096"), "counts 'uniform:4096': expected uniform:MAX:SEED or skewed:MAX:SEED");
  ExpectRefused(run(dir.file("none.txt")), dir.file("none.txt") + ": cannot read the count matrix");
}

TEST(SimInputErrors, ShippedFilesAreAccepted) {
  // The shipped calibration and platform run, and a calibration file ohio-sim writes reads back.
  const SimRun run = RunOhioSim({"--nodes", "2", "--ppn", "1", "--bytes", "1"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  TempDir dir;
  const SimRun written = RunOhioSimRaw({"calibrate", "--out", dir.file("cal.txt"), "--threads", "1"});
  ASSERT_EQ(written.exit_code, 0) << written.output;
  const SimRun reread = RunWith(ThisBoxPlatform(), dir.file("cal.txt"));
  EXPECT_EQ(reread.exit_code, 0) << reread.output;
}

}  // namespace
}  // namespace ohio::testing
