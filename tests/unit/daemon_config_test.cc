// ohiod's settings: config file, then OHIOD_* environment, then flags; errors name the key.
#include <stdlib.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "daemon/ops/config.h"
#include "shm/tables/internode_table_text.h"
#include "shm/tables/selection_table_text.h"

namespace ohio {
namespace {

using ::testing::HasSubstr;

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ohio-config-XXXXXX";
    dir_ = mkdtemp(tmpl);
    for (const char* v : {"OHIOD_SSB_BYTES", "OHIOD_NODE_NAME", "OHIOD_TIMEOUT_MS", "OHIOD_LOG_LEVEL"}) unsetenv(v);
  }
  void TearDown() override {
    unlink(file_.c_str());
    rmdir(dir_.c_str());
    for (const char* v : {"OHIOD_SSB_BYTES", "OHIOD_NODE_NAME", "OHIOD_TIMEOUT_MS", "OHIOD_LOG_LEVEL"}) unsetenv(v);
  }
  std::string WriteFile(const std::string& text) {
    file_ = dir_ + "/ohiod.conf";
    std::ofstream(file_) << text;
    return file_;
  }
  ConfigOutcome Load(std::vector<std::string> args) {
    args.insert(args.begin(), "ohiod");
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    return LoadDaemonConfig(static_cast<int>(argv.size()), argv.data());
  }

  // `flag`=`value` on the command line stops ohiod (exit 2) naming the option and saying `why`.
  void ExpectRefused(const std::string& flag, const std::string& value, const std::string& why) {
    auto bad = Load({"--config=", flag + "=" + value});
    EXPECT_TRUE(bad.exit_now) << flag << "=" << value;
    EXPECT_EQ(bad.exit_code, 2) << flag << "=" << value;
    EXPECT_THAT(bad.output, HasSubstr(flag)) << bad.output;
    EXPECT_THAT(bad.output, HasSubstr(why)) << bad.output;
  }

  std::string dir_;
  std::string file_;
};

TEST_F(ConfigTest, FileThenEnvironmentThenFlags) {
  const std::string f = WriteFile(
      "# comment\n"
      "node_name = from-file\n"
      "ssb-bytes = 2MiB   # both spellings of a key work\n"
      "timeout_ms = 1234\n"
      "log_level = \"warn\"\n");
  auto only_file = Load({"--config", f});
  ASSERT_FALSE(only_file.exit_now) << only_file.output;
  EXPECT_EQ(only_file.config.node_name, "from-file");
  EXPECT_EQ(only_file.config.ssb_bytes, 2u << 20);
  EXPECT_EQ(only_file.config.timeout_ms, 1234u);
  EXPECT_EQ(only_file.config.log_level, "warn");
  EXPECT_EQ(only_file.config.config_file, f);

  setenv("OHIOD_NODE_NAME", "from-env", 1);
  setenv("OHIOD_SSB_BYTES", "3MiB", 1);
  auto with_env = Load({"--config", f});
  ASSERT_FALSE(with_env.exit_now) << with_env.output;
  EXPECT_EQ(with_env.config.node_name, "from-env");
  EXPECT_EQ(with_env.config.ssb_bytes, 3u << 20);
  EXPECT_EQ(with_env.config.timeout_ms, 1234u);

  auto with_flags = Load({"--config", f, "--node-name", "from-flag"});
  ASSERT_FALSE(with_flags.exit_now) << with_flags.output;
  EXPECT_EQ(with_flags.config.node_name, "from-flag");
  EXPECT_EQ(with_flags.config.ssb_bytes, 3u << 20);
}

TEST_F(ConfigTest, DefaultsWithoutAnySource) {
  auto c = Load({"--config="});
  ASSERT_FALSE(c.exit_now) << c.output;
  EXPECT_EQ(c.config.socket, "/run/ohio/ohiod.sock");
  EXPECT_EQ(c.config.design, "v3");
  EXPECT_FALSE(c.config.node_name.empty());  // the host name
}

// cpus: auto unless set; a number of CPUs above 0, fractions too (a node's share of a host).
TEST_F(ConfigTest, CpusIsAutoOrAPositiveNumber) {
  EXPECT_EQ(Load({"--config="}).config.cpus, "auto");
  auto share = Load({"--config=", "--cpus", "0.125"});
  ASSERT_FALSE(share.exit_now) << share.output;
  EXPECT_EQ(share.config.cpus, "0.125");
  for (const char* bad : {"0", "-1", "", "two", "0x2", "1.5cpus", "nan", "1e9"}) {
    auto c = Load({"--config=", std::string("--cpus=") + bad});
    EXPECT_TRUE(c.exit_now) << bad;
    EXPECT_EQ(c.exit_code, 2) << bad;
    EXPECT_THAT(c.output, HasSubstr("--cpus")) << bad << ": " << c.output;
  }
}

// The bounds on memory held for unfinished control messages must leave room for one message of
// the largest size (and the rest of a read); the hello timeout, the control socket's frame
// timeout and the data port's cap have defaults an admin can change, within their ranges.
TEST_F(ConfigTest, PendingBoundsHoldALargestMessage) {
  auto defaults = Load({"--config="});
  ASSERT_FALSE(defaults.exit_now) << defaults.output;
  EXPECT_EQ(defaults.config.user_max_pending_bytes, 64u << 20);
  EXPECT_EQ(defaults.config.max_pending_bytes, 256u << 20);
  EXPECT_EQ(defaults.config.hello_timeout_ms, 5000u);
  EXPECT_EQ(defaults.config.max_unauthenticated_data_connections, 128u);
  auto fits = Load({"--config=", "--max-message-bytes", "1MiB", "--user-max-pending-bytes", "1088KiB"});
  ASSERT_FALSE(fits.exit_now) << fits.output;
  auto small = Load({"--config=", "--user-max-pending-bytes", "4MiB"});
  EXPECT_TRUE(small.exit_now);
  EXPECT_EQ(small.exit_code, 2);
  EXPECT_THAT(small.output, HasSubstr("user-max-pending-bytes = 4194304 is less than max-message-bytes + 64KiB = "
                                      "4259840: a client could not send a message of the largest size"));
  auto total = Load({"--config=", "--max-pending-bytes", "1MiB"});
  EXPECT_TRUE(total.exit_now);
  EXPECT_THAT(total.output, HasSubstr("max-pending-bytes = 1048576 is less than"));
  EXPECT_TRUE(Load({"--config=", "--hello-timeout-ms", "50"}).exit_now);
  EXPECT_EQ(defaults.config.control_frame_timeout_ms, 3000u);
  EXPECT_EQ(Load({"--config=", "--control-frame-timeout-ms", "500"}).config.control_frame_timeout_ms, 500u);
  auto short_frames = Load({"--config=", "--control-frame-timeout-ms", "50"});
  EXPECT_TRUE(short_frames.exit_now);
  EXPECT_THAT(short_frames.output, HasSubstr("control-frame-timeout-ms"));
  EXPECT_TRUE(Load({"--config=", "--control-frame-timeout-ms", "600001"}).exit_now);
}

// The peer port's caps and gRPC's bounds, and the data port's frame timeout: defaults, and
// values out of range refused naming the flag.
TEST_F(ConfigTest, PortBoundsHaveDefaultsAndRanges) {
  auto defaults = Load({"--config="});
  ASSERT_FALSE(defaults.exit_now) << defaults.output;
  EXPECT_EQ(defaults.config.max_unauthenticated_peer_connections, 128u);
  EXPECT_EQ(defaults.config.data_frame_timeout_ms, 5000u);
  EXPECT_EQ(defaults.config.peer_connection_idle_ms, 120000u);
  EXPECT_EQ(defaults.config.peer_service_threads, 64u);
  auto set = Load({"--config=", "--max-unauthenticated-peer-connections", "8", "--data-frame-timeout-ms", "1500",
                   "--peer-connection-idle-ms", "30000", "--peer-service-threads", "16"});
  ASSERT_FALSE(set.exit_now) << set.output;
  EXPECT_EQ(set.config.max_unauthenticated_peer_connections, 8u);
  EXPECT_EQ(set.config.data_frame_timeout_ms, 1500u);
  EXPECT_EQ(set.config.peer_connection_idle_ms, 30000u);
  EXPECT_EQ(set.config.peer_service_threads, 16u);
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"--max-unauthenticated-peer-connections", "1"},
           {"--data-frame-timeout-ms", "50"},
           {"--peer-connection-idle-ms", "10"},
           {"--peer-service-threads", "2"}}) {
    std::vector<std::string> args = {"--config="};
    args.insert(args.end(), bad.begin(), bad.end());
    auto c = Load(args);
    EXPECT_TRUE(c.exit_now) << bad[0];
    EXPECT_EQ(c.exit_code, 2) << bad[0];
    EXPECT_THAT(c.output, HasSubstr(bad[0])) << c.output;
  }
}

// auth = munge unless an admin says none: in the file, the environment or a flag.
TEST_F(ConfigTest, AuthIsMungeUnlessNoneIsChosen) {
  auto defaults = Load({"--config="});
  ASSERT_FALSE(defaults.exit_now) << defaults.output;
  EXPECT_EQ(defaults.config.auth, "munge");
  EXPECT_EQ(defaults.config.munge_socket, "/run/munge/munge.socket.2");

  const std::string f = WriteFile("auth = none\nmunge_socket = /run/other/munge.sock\n");
  auto file = Load({"--config", f});
  ASSERT_FALSE(file.exit_now) << file.output;
  EXPECT_EQ(file.config.auth, "none");
  EXPECT_EQ(file.config.munge_socket, "/run/other/munge.sock");
  auto flag = Load({"--config", f, "--auth", "munge"});
  ASSERT_FALSE(flag.exit_now) << flag.output;
  EXPECT_EQ(flag.config.auth, "munge");

  setenv("OHIOD_AUTH", "none", 1);
  auto env = Load({"--config="});
  unsetenv("OHIOD_AUTH");
  ASSERT_FALSE(env.exit_now) << env.output;
  EXPECT_EQ(env.config.auth, "none");

  for (const char* v : {"--auth=kerberos", "--auth=", "--auth=Munge"}) {
    auto bad = Load({"--config=", v});
    EXPECT_TRUE(bad.exit_now) << v;
    EXPECT_EQ(bad.exit_code, 2) << v;
    EXPECT_THAT(bad.output, HasSubstr("--auth")) << bad.output;
  }
  const std::string empty = WriteFile("auth =\n");  // "key =" keeps the default
  auto kept = Load({"--config", empty});
  ASSERT_FALSE(kept.exit_now) << kept.output;
  EXPECT_EQ(kept.config.auth, "munge");

  auto help = Load({"--help"});
  EXPECT_THAT(help.output, HasSubstr("--auth"));
  EXPECT_THAT(help.output, HasSubstr("--munge-socket"));
}

TEST_F(ConfigTest, UnknownKeyInFileNamesKeyAndLine) {
  const std::string f = WriteFile("socket = /tmp/x.sock\nssb_bytez = 1MiB\n");
  auto c = Load({"--config", f});
  EXPECT_TRUE(c.exit_now);
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_THAT(c.output, HasSubstr(f + ":2: unknown key 'ssb-bytez'"));
}

// Caught by the daemon_config fuzz target's invariant: "help = 1" in the file printed the help and exited 0,
// so ohiod stopped as if asked to, and a reload logged the whole help text as its error.
TEST_F(ConfigTest, HelpAndVersionAreNotKeysOfTheFile) {
  for (const std::string key : {"help", "version"}) {
    const std::string f = WriteFile("timeout-ms = 5000\n" + key + " = 1\n");
    auto c = Load({"--config", f});
    EXPECT_TRUE(c.exit_now);
    EXPECT_EQ(c.exit_code, 2);
    EXPECT_THAT(c.output, HasSubstr(f + ":2: unknown key '" + key + "'"));
  }
}

TEST_F(ConfigTest, LineWithoutEqualsIsAnError) {
  const std::string f = WriteFile("socket /tmp/x.sock\n");
  auto c = Load({"--config", f});
  EXPECT_TRUE(c.exit_now);
  EXPECT_THAT(c.output, HasSubstr(":1: expected 'key = value'"));
}

// A bad value from the file or the environment says where it is, as an unknown key does: the
// option's name alone sends an admin looking through three sources.
TEST_F(ConfigTest, BadValueNamesTheFileLineOrTheVariable) {
  const std::string f = WriteFile("socket = /tmp/x.sock\n\ntimeout_ms = soon\n");
  auto from_file = Load({"--config", f});
  EXPECT_TRUE(from_file.exit_now);
  EXPECT_EQ(from_file.exit_code, 2);
  EXPECT_THAT(from_file.output, HasSubstr("ohiod: " + f + ":3: --timeout-ms"));

  const std::string good = WriteFile("timeout_ms = 5000\n");
  setenv("OHIOD_LOG_LEVEL", "loud", 1);
  auto from_env = Load({"--config", good});
  EXPECT_TRUE(from_env.exit_now);
  EXPECT_THAT(from_env.output, HasSubstr("ohiod: OHIOD_LOG_LEVEL in the environment: --log-level"));
  unsetenv("OHIOD_LOG_LEVEL");

  // On the command line the flag is where the error is: no pointer.
  auto from_flag = Load({"--config", good, "--timeout-ms", "later"});
  EXPECT_TRUE(from_flag.exit_now);
  EXPECT_THAT(from_flag.output, HasSubstr("--timeout-ms"));
  EXPECT_THAT(from_flag.output, ::testing::Not(HasSubstr(good + ":")));
}

TEST_F(ConfigTest, BadValuesNameTheOption) {
  // Given under its former name, the design's setting is named as it is now.
  auto algo = Load({"--config=", "--algorithm", "v9"});
  EXPECT_TRUE(algo.exit_now);
  EXPECT_EQ(algo.exit_code, 2);
  EXPECT_EQ(algo.output, "ohiod: --design: v9 not in {v1,v2,v3}\n");

  setenv("OHIOD_TIMEOUT_MS", "soon", 1);
  auto timeout = Load({"--config="});
  EXPECT_TRUE(timeout.exit_now);
  EXPECT_THAT(timeout.output, HasSubstr("--timeout-ms"));
  unsetenv("OHIOD_TIMEOUT_MS");

  const std::string f = WriteFile("ssb_bytes = lots\n");
  auto size = Load({"--config", f});
  EXPECT_TRUE(size.exit_now);
  EXPECT_THAT(size.output, HasSubstr("--ssb-bytes"));

  // CLI11 reads integers with strtoull: "-1" must not wrap to 2^64-1.
  for (const char* v : {"--ssb-bytes=-1", "--memory-limit=-4096", "--srb-bytes=-1KiB"}) {
    auto negative = Load({"--config=", v});
    EXPECT_TRUE(negative.exit_now) << v;
    EXPECT_EQ(negative.exit_code, 2) << v;
    EXPECT_THAT(negative.output, HasSubstr(std::string(v).substr(0, std::string(v).find('=')))) << negative.output;
  }
  auto hex = Load({"--config=", "--ssb-bytes=0x10000"});
  EXPECT_FALSE(hex.exit_now) << hex.output;
  EXPECT_EQ(hex.config.ssb_bytes, 0x10000u);

  auto missing = Load({"--config", dir_ + "/absent.conf"});
  EXPECT_TRUE(missing.exit_now);
  EXPECT_THAT(missing.output, HasSubstr("cannot read config file"));
}

// internode-table names a file read when the settings load (errors name its line),
// internode-algorithm forces one algorithm; both travel like every other setting (file,
// OHIOD_INTERNODE_ALGORITHM, flags).
TEST_F(ConfigTest, InterNodeTableFileAndForcedInterNodeAlgorithm) {
  auto defaults = Load({"--config="});
  ASSERT_FALSE(defaults.exit_now) << defaults.output;
  EXPECT_EQ(defaults.config.internode, "auto");
  EXPECT_EQ(defaults.config.internode_table, "");
  EXPECT_EQ(FormatInterNodeTable(defaults.config.internode_rules), FormatInterNodeTable(DefaultInterNodeTable()));

  const std::string table = dir_ + "/internode.table";
  std::ofstream(table) << "# measured\n2+ 4KiB hypercube\n2+ any direct\n";
  const std::string f = WriteFile("internode-table = " + table + "\ninternode-algorithm = direct\n");
  auto from_file = Load({"--config", f});
  ASSERT_FALSE(from_file.exit_now) << from_file.output;
  EXPECT_EQ(from_file.config.internode, "direct");
  EXPECT_EQ(from_file.config.internode_table, table);
  EXPECT_EQ(FormatInterNodeTable(from_file.config.internode_rules), "2+ 4KiB hypercube\n2+ any direct\n");

  setenv("OHIOD_INTERNODE_ALGORITHM", "pairwise", 1);
  auto from_env = Load({"--config", f});
  unsetenv("OHIOD_INTERNODE_ALGORITHM");
  ASSERT_FALSE(from_env.exit_now) << from_env.output;
  EXPECT_EQ(from_env.config.internode, "pairwise");

  // A config file written with the settings' former names still loads.
  const std::string former = WriteFile("leader_table = " + table + "\nleader = hypercube\n");
  auto from_former = Load({"--config", former});
  ASSERT_FALSE(from_former.exit_now) << from_former.output;
  EXPECT_EQ(from_former.config.internode, "hypercube");
  EXPECT_EQ(from_former.config.internode_table, table);

  auto bad_choice = Load({"--config=", "--internode-algorithm", "bruck"});
  EXPECT_TRUE(bad_choice.exit_now);
  EXPECT_EQ(bad_choice.exit_code, 2);
  EXPECT_THAT(bad_choice.output, HasSubstr("--internode-algorithm"));

  std::ofstream(table) << "2+ 4KiB hypercube\n2+ lots direct\n";
  auto bad_row = Load({"--config=", "--internode-table", table});
  EXPECT_TRUE(bad_row.exit_now);
  EXPECT_EQ(bad_row.exit_code, 2);
  EXPECT_EQ(bad_row.output, "ohiod: inter-node table " + table +
                                ":2: expected max-block as bytes (e.g. 4096 or 4KiB) or 'any', got 'lots'\n");
  unlink(table.c_str());

  auto missing = Load({"--config=", "--internode-table", table});
  EXPECT_TRUE(missing.exit_now);
  EXPECT_EQ(missing.output, "ohiod: cannot read inter-node table " + table + "\n");
}

// selection-table names a file read when the settings load, like internode-table: its rows as
// read, errors naming the file and line, a file that cannot be read named as such.
TEST_F(ConfigTest, SelectionTableFile) {
  auto defaults = Load({"--config="});
  ASSERT_FALSE(defaults.exit_now) << defaults.output;
  EXPECT_EQ(defaults.config.selection_table, "");
  EXPECT_EQ(FormatSelectionTable(defaults.config.selection_rules), FormatSelectionTable(DefaultSelectionTable()));

  const std::string table = dir_ + "/selection.table";
  std::ofstream(table) << "# measured\nalltoall 2+ any tcp 1024-4096 ohio\nany any any any any mpi\n";
  const std::string f = WriteFile("selection_table = " + table + "\n");
  auto from_file = Load({"--config", f});
  ASSERT_FALSE(from_file.exit_now) << from_file.output;
  EXPECT_EQ(from_file.config.selection_table, table);
  EXPECT_EQ(FormatSelectionTable(from_file.config.selection_rules),
            "alltoall 2+ any tcp 1KiB-4KiB ohio\nany any any any any mpi\n");
  setenv("OHIOD_SELECTION_TABLE", "", 1);  // empty: as if unset
  auto from_env = Load({"--config", f});
  unsetenv("OHIOD_SELECTION_TABLE");
  ASSERT_FALSE(from_env.exit_now) << from_env.output;
  EXPECT_EQ(from_env.config.selection_table, table);

  std::ofstream(table) << "alltoall 2+ any tcp 1-4KiB ohio\n\nalltoall 1 lots any any ohio\n";
  auto bad_row = Load({"--config", f});
  EXPECT_TRUE(bad_row.exit_now);
  EXPECT_EQ(bad_row.exit_code, 2);
  EXPECT_THAT(bad_row.output, ::testing::StartsWith("ohiod: selection table " + table + ":3: "));
  EXPECT_THAT(bad_row.output, HasSubstr("'lots'"));
  unlink(table.c_str());

  auto missing = Load({"--config=", "--selection-table", table});
  EXPECT_TRUE(missing.exit_now);
  EXPECT_EQ(missing.output, "ohiod: cannot read selection table " + table + "\n");
}

// direct-window bounds what the direct algorithm keeps in flight: 4 unless set, 1..1024, and a
// value out of that range stops ohiod with the option and the value named.
TEST_F(ConfigTest, DirectWindowIsBetweenOneAnd1024) {
  auto defaults = Load({"--config="});
  ASSERT_FALSE(defaults.exit_now) << defaults.output;
  EXPECT_EQ(defaults.config.direct_window, 4u);

  const std::string f = WriteFile("direct_window = 2\n");
  auto from_file = Load({"--config", f});
  ASSERT_FALSE(from_file.exit_now) << from_file.output;
  EXPECT_EQ(from_file.config.direct_window, 2u);
  auto from_flag = Load({"--config", f, "--direct-window", "1024"});
  ASSERT_FALSE(from_flag.exit_now) << from_flag.output;
  EXPECT_EQ(from_flag.config.direct_window, 1024u);

  for (const std::string v : {"0", "1025", "-1", "4x", "99999999999999999999"}) {
    ExpectRefused("--direct-window", v,
                  "expected the most puts the direct algorithm keeps in flight from a node, 1 to 1024, got '" + v +
                      "'");
  }
}

// rtr-retry-budget-ms: 5000 unless set, 0 (one attempt) to 5000, half the 10 s a dialling node
// waits for the answer; anything else refused naming the setting, its range and why.
TEST_F(ConfigTest, RtrRetryBudgetIsZeroToHalfTheDialDeadline) {
  EXPECT_EQ(Load({"--config="}).config.rtr_retry_budget_ms, 5000u);
  const std::string f = WriteFile("rtr_retry_budget_ms = 1500\n");
  EXPECT_EQ(Load({"--config", f}).config.rtr_retry_budget_ms, 1500u);
  setenv("OHIOD_RTR_RETRY_BUDGET_MS", "2500", 1);
  EXPECT_EQ(Load({"--config", f}).config.rtr_retry_budget_ms, 2500u);
  unsetenv("OHIOD_RTR_RETRY_BUDGET_MS");
  EXPECT_EQ(Load({"--config", f, "--rtr-retry-budget-ms", "0"}).config.rtr_retry_budget_ms, 0u);
  EXPECT_EQ(Load({"--config", f, "--rtr-retry-budget-ms", "5000"}).config.rtr_retry_budget_ms, 5000u);

  for (const std::string v : {"5001", "60000", "-1", "1s", "1e3", " 5", "99999999999999999999"}) {
    ExpectRefused("--rtr-retry-budget-ms", v,
                  "expected milliseconds from 0 (one attempt) to 5000 (half the 10 s a dialling node waits for this "
                  "node's answer), got '" + v + "'");
  }
  const std::string bad_file = WriteFile("rtr-retry-budget-ms = 10000\n");
  auto in_file = Load({"--config", bad_file});
  EXPECT_TRUE(in_file.exit_now);
  EXPECT_THAT(in_file.output, HasSubstr(bad_file + ":1: --rtr-retry-budget-ms")) << in_file.output;
}

TEST_F(ConfigTest, HelpListsEverySettingAndItsEnvironmentName) {
  auto c = Load({"--help"});
  EXPECT_TRUE(c.exit_now);
  EXPECT_EQ(c.exit_code, 0);
  for (const char* key : {"--socket", "--node-name", "--ssb-bytes", "--srb-bytes", "--memory-limit",
                          "--registered-memory-limit", "--timeout-ms", "--spin-us", "--cpus", "--design",
                          "--internode-table", "--internode-algorithm", "--direct-window", "--selection-table",
                          "--log-level", "--rtr-retry-budget-ms", "--config", "OHIOD_<KEY>"}) {
    EXPECT_THAT(c.output, HasSubstr(key));
  }
}

// Test hooks are no settings: --help leaves them out, yet the tests that set them on the command line
// or in a config file still get them.
TEST_F(ConfigTest, TestHooksAreHiddenFromHelpButStillTaken) {
  auto help = Load({"--help"});
  EXPECT_TRUE(help.exit_now);
  EXPECT_THAT(help.output, HasSubstr("--rc-pool-interval-ms"));
  EXPECT_THAT(help.output, ::testing::Not(HasSubstr("drop-one-datagram-in"))) << help.output;
  EXPECT_THAT(help.output, ::testing::Not(HasSubstr("Test hooks"))) << help.output;

  auto flag = Load({"--config=", "--drop-one-datagram-in", "7"});
  ASSERT_FALSE(flag.exit_now) << flag.output;
  EXPECT_EQ(flag.config.drop_one_datagram_in, 7u);

  auto in_file = Load({"--config", WriteFile("drop_one_datagram_in = 9\n")});
  ASSERT_FALSE(in_file.exit_now) << in_file.output;
  EXPECT_EQ(in_file.config.drop_one_datagram_in, 9u);

  setenv("OHIOD_DROP_ONE_DATAGRAM_IN", "11", 1);
  auto from_env = Load({"--config="});
  unsetenv("OHIOD_DROP_ONE_DATAGRAM_IN");
  ASSERT_FALSE(from_env.exit_now) << from_env.output;
  EXPECT_EQ(from_env.config.drop_one_datagram_in, 11u);

  // Its errors still name it.
  ExpectRefused("--drop-one-datagram-in", "1000001", "not in range 0 to 1000000");
}

// The node-level design's setting, and its former name still read from each source.
TEST_F(ConfigTest, DesignUnderItsNameAndItsFormerName) {
  EXPECT_EQ(Load({"--config=", "--design", "v1"}).config.design, "v1");
  EXPECT_EQ(Load({"--config=", "--algorithm", "v2"}).config.design, "v2");
  EXPECT_EQ(Load({"--config", WriteFile("design = v1\n")}).config.design, "v1");
  auto former_key = Load({"--config", WriteFile("algorithm = v2\n")});
  ASSERT_FALSE(former_key.exit_now) << former_key.output;
  EXPECT_EQ(former_key.config.design, "v2");
  setenv("OHIOD_ALGORITHM", "v1", 1);
  EXPECT_EQ(Load({"--config="}).config.design, "v1");
  setenv("OHIOD_DESIGN", "v2", 1);
  EXPECT_EQ(Load({"--config="}).config.design, "v2") << "the new name wins";
  unsetenv("OHIOD_DESIGN");
  unsetenv("OHIOD_ALGORITHM");
  auto bad = Load({"--config=", "--design", "v4"});
  EXPECT_TRUE(bad.exit_now);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.output, HasSubstr("--design"));
}

}  // namespace
}  // namespace ohio
