// What SIGHUP does with ohiod's settings: every setting is listed (and documented in the
// default config file), reloadable ones are applied and the others wait for a restart.
#include <stdlib.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/ops/config.h"
#include "daemon/ops/live_config.h"
#include "shm/tables/internode_table_text.h"
#include "shm/tables/selection_table_text.h"

namespace ohio {
namespace {

using ::testing::HasSubstr;

ConfigOutcome Load(std::vector<std::string> args) {
  args.insert(args.begin(), "ohiod");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return LoadDaemonConfig(static_cast<int>(argv.size()), argv.data());
}

// A file in a fresh directory of its own, both removed when the test's scope ends (however
// it ends).
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& name) {
    char tmpl[] = "/tmp/ohio-config-XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/" + name;
  }
  ~ScratchFile() {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

std::set<std::string> Keys(const DaemonConfig& c) {
  std::set<std::string> keys;
  for (const auto& [k, v] : ConfigEntries(c)) keys.insert(k);
  return keys;
}

TEST(ConfigEntries, ListsEveryFlagOfHelpWithItsValue) {
  auto loaded = Load({"--config=", "--node-name", "n7", "--peer", "a=h:1", "--peer", "b=h:2", "--ssb-bytes", "2MiB"});
  ASSERT_FALSE(loaded.exit_now) << loaded.output;
  const auto entries = ConfigEntries(loaded.config);
  std::map<std::string, std::string> m(entries.begin(), entries.end());
  EXPECT_EQ(m["node-name"], "n7");
  EXPECT_EQ(m["peer"], "a=h:1,b=h:2");
  EXPECT_EQ(m["ssb-bytes"], "2097152");
  EXPECT_EQ(m["timeout-ms"], "60000");
  EXPECT_EQ(m["metrics-file"], "");
  EXPECT_EQ(m["metrics-interval-s"], "15");
  EXPECT_EQ(m.count("config"), 0u);
  EXPECT_TRUE(std::is_sorted(entries.begin(), entries.end()));
  // Every key is a flag that --help shows, but the test hooks, which it hides
  // (daemon_config_test), and every flag but --config is a key.
  const std::set<std::string> test_hooks = {"drop-one-datagram-in"};
  EXPECT_EQ(m.count("drop-one-datagram-in"), 1u);
  const std::string help = Load({"--help"}).output;
  for (const auto& [key, value] : entries) {
    if (test_hooks.count(key) == 0) EXPECT_THAT(help, HasSubstr("--" + key)) << key;
  }
  std::regex flag("--([a-z][a-z-]+)");
  for (auto it = std::sregex_iterator(help.begin(), help.end(), flag); it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    if (name == "config" || name == "help" || name == "version") continue;
    EXPECT_EQ(m.count(name), 1u) << "--" << name << " is missing from ConfigEntries";
  }
}

TEST(ConfigReload, MetricsSettingsAreCheckedLikeTheOthers) {
  auto ok = Load({"--config=", "--metrics-file", "/tmp/x.prom", "--metrics-interval-s", "5"});
  ASSERT_FALSE(ok.exit_now) << ok.output;
  EXPECT_EQ(ok.config.metrics_file, "/tmp/x.prom");
  EXPECT_EQ(ok.config.metrics_interval_s, 5u);
  auto zero = Load({"--config=", "--metrics-interval-s", "0"});
  EXPECT_TRUE(zero.exit_now);
  EXPECT_THAT(zero.output, HasSubstr("--metrics-interval-s"));
}

TEST(ConfigReload, ApplyReloadableTakesExactlyTheReloadableKeys) {
  DaemonConfig running = Load({"--config="}).config;
  DaemonConfig next = running;
  next.log_level = "debug";
  next.timeout_ms = 1234;
  next.spin_us = 7;
  next.metrics_file = "/tmp/m.prom";
  next.metrics_interval_s = 3;
  next.socket = "/tmp/other.sock";
  next.memory_limit = 1 << 20;
  next.peers = {"x=h:1"};
  const auto before = DiffConfig(running, next);
  ASSERT_EQ(before.size(), 8u);
  for (const auto& c : before) {
    const bool restart = c.key == "socket" || c.key == "memory-limit" || c.key == "peer";
    EXPECT_EQ(IsReloadable(c.key), !restart) << c.key;
  }
  ApplyReloadable(next, &running);
  // What is left is what IsReloadable calls restart-only: the two lists agree.
  for (const auto& c : DiffConfig(running, next)) EXPECT_FALSE(IsReloadable(c.key)) << c.key;
  EXPECT_EQ(DiffConfig(running, next).size(), 3u);
  EXPECT_EQ(running.timeout_ms, 1234u);
  EXPECT_EQ(running.socket, "/run/ohio/ohiod.sock");
}

TEST(ConfigReload, LiveConfigAppliesReloadableKeysAndHoldsTheRestPending) {
  const ScratchFile conf("ohiod.conf");
  const std::string& file = conf.path();
  std::ofstream(file) << "timeout_ms = 60000\nsocket = /tmp/a.sock\n";
  auto first = Load({"--config", file});
  ASSERT_FALSE(first.exit_now) << first.output;
  LiveConfig live(first.config);
  EXPECT_EQ(live.last_reload(), "");

  std::ofstream(file) << "timeout_ms = 1500\nsocket = /tmp/b.sock\n";
  auto second = Load({"--config", file});
  ASSERT_FALSE(second.exit_now) << second.output;
  const auto r = live.Apply(second.config);
  ASSERT_EQ(r.applied.size(), 1u);
  EXPECT_EQ(r.applied[0].key, "timeout-ms");
  EXPECT_EQ(r.applied[0].from, "60000");
  EXPECT_EQ(r.applied[0].to, "1500");
  ASSERT_EQ(r.need_restart.size(), 1u);
  EXPECT_EQ(r.need_restart[0].key, "socket");
  EXPECT_EQ(live.current().timeout_ms, 1500u);
  EXPECT_EQ(live.current().socket, "/tmp/a.sock");  // the socket in use stays
  EXPECT_EQ(live.pending().at("socket"), "/tmp/b.sock");
  EXPECT_THAT(live.last_reload(), HasSubstr("applied timeout-ms; needs a restart: socket"));

  // Set back, the socket is no longer pending.
  std::ofstream(file) << "timeout_ms = 1500\nsocket = /tmp/a.sock\n";
  const auto third = live.Apply(Load({"--config", file}).config);
  EXPECT_TRUE(third.applied.empty());
  EXPECT_TRUE(third.need_restart.empty());
  EXPECT_TRUE(live.pending().empty());
  EXPECT_THAT(live.last_reload(), HasSubstr("no change applied"));

  live.Failed("ohiod: bad value");
  EXPECT_THAT(live.last_reload(), HasSubstr("reload failed"));
  EXPECT_EQ(live.current().timeout_ms, 1500u);
}

TEST(ConfigReload, AInterNodeTableFileEditedInPlaceWaitsForARestart) {
  const ScratchFile file("internode.table");
  const std::string& table = file.path();
  std::ofstream(table) << "4+ 4KiB hypercube\n";
  auto first = Load({"--internode-table", table});
  ASSERT_FALSE(first.exit_now) << first.output;
  LiveConfig live(first.config);
  // Same path, other rules: a setting that needs a restart (groups compare tables at setup).
  std::ofstream(table) << "4+ 1KiB hypercube\n";
  auto second = Load({"--internode-table", table});
  ASSERT_FALSE(second.exit_now) << second.output;
  const auto r = live.Apply(second.config);
  EXPECT_TRUE(r.applied.empty());
  ASSERT_EQ(r.need_restart.size(), 1u);
  EXPECT_EQ(r.need_restart[0].key, "internode-table");
  EXPECT_THAT(r.need_restart[0].from, HasSubstr(InterNodeTableDigest(first.config.internode_rules)));
  EXPECT_THAT(r.need_restart[0].to, HasSubstr(InterNodeTableDigest(second.config.internode_rules)));
  EXPECT_NE(InterNodeTableDigest(first.config.internode_rules), InterNodeTableDigest(second.config.internode_rules));
  EXPECT_EQ(live.pending().count("internode-table"), 1u);
  EXPECT_EQ(InterNodeTableDigest(live.current().internode_rules), InterNodeTableDigest(first.config.internode_rules));
  // Edited back: nothing pending.
  std::ofstream(table) << "# the same rules, spelt otherwise\n4+   4096B   hypercube\n";
  live.Apply(Load({"--internode-table", table}).config);
  EXPECT_TRUE(live.pending().empty());
}

// The selection table is handed to ranks at join, so a new one can serve the groups created
// after a reload: a file edited in place, or another file, goes into force; a file that no
// longer parses fails the whole reload (LoadDaemonConfig's error names its line), and the table
// in force stays.
TEST(ConfigReload, ASelectionTableFileGoesIntoForceAndABadOneChangesNothing) {
  const ScratchFile file("selection.table");
  const std::string& table = file.path();
  std::ofstream(table) << "alltoall 2+ any tcp 1-4KiB ohio\n";
  auto first = Load({"--config=", "--selection-table", table});
  ASSERT_FALSE(first.exit_now) << first.output;
  LiveConfig live(first.config);
  const std::string was = SelectionTableDigest(first.config.selection_rules);

  std::ofstream(table) << "alltoall 2+ any tcp 1-8KiB ohio\n";
  auto second = Load({"--config=", "--selection-table", table});
  ASSERT_FALSE(second.exit_now) << second.output;
  const std::string is = SelectionTableDigest(second.config.selection_rules);
  ASSERT_NE(was, is);
  const auto r = live.Apply(second.config);
  EXPECT_TRUE(r.need_restart.empty());
  ASSERT_EQ(r.applied.size(), 1u);
  EXPECT_EQ(r.applied[0].key, "selection-table");
  EXPECT_EQ(r.applied[0].from, table + " (table " + was + ")");
  EXPECT_EQ(r.applied[0].to, table + " (table " + is + ")");
  EXPECT_TRUE(live.pending().empty());
  EXPECT_EQ(SelectionTableDigest(live.current().selection_rules), is);
  EXPECT_THAT(live.last_reload(), HasSubstr("applied selection-table"));

  // Back to the built-in table: the setting emptied.
  auto builtin = Load({"--config="});
  ASSERT_FALSE(builtin.exit_now) << builtin.output;
  live.Apply(builtin.config);
  EXPECT_EQ(live.current().selection_table, "");
  EXPECT_EQ(SelectionTableDigest(live.current().selection_rules), SelectionTableDigest(DefaultSelectionTable()));

  // A file that no longer parses: the reload reads no settings, and those in force stay.
  live.Apply(second.config);
  std::ofstream(table) << "alltoall 2+ any tcp 1-8KiB perhaps\n";
  auto bad = Load({"--config=", "--selection-table", table});
  ASSERT_TRUE(bad.exit_now);
  EXPECT_THAT(bad.output, HasSubstr("selection table " + table + ":1: unknown path 'perhaps'"));
  live.Failed(bad.output);
  EXPECT_THAT(live.last_reload(), HasSubstr("reload failed"));
  EXPECT_EQ(SelectionTableDigest(live.current().selection_rules), is);
  EXPECT_TRUE(IsReloadable("selection-table"));
}

TEST(ConfigReload, AnEmptyValueMeansTheDefault) {
  const ScratchFile conf("ohiod.conf");
  const std::string& file = conf.path();
  // Read naively, "--metrics-file=" would swallow the next setting as its value.
  std::ofstream(file) << "metrics-file =\nsocket = /tmp/s.sock\n";
  setenv("OHIOD_TIMEOUT_MS", "", 1);
  auto c = Load({"--config", file});
  unsetenv("OHIOD_TIMEOUT_MS");
  ASSERT_FALSE(c.exit_now) << c.output;
  EXPECT_EQ(c.config.metrics_file, "");
  EXPECT_EQ(c.config.socket, "/tmp/s.sock");
  EXPECT_EQ(c.config.timeout_ms, 60000u);
}

// deploy/ohiod.conf documents every key, and with every setting uncommented it loads and gives
// the defaults (the few without a fixed default show an example).
TEST(DefaultConfigFile, DocumentsEveryKeyAndLoadsUncommented) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  ASSERT_TRUE(srcdir != nullptr && workspace != nullptr);
  std::ifstream in(std::string(srcdir) + "/" + workspace + "/deploy/ohiod.conf");
  ASSERT_TRUE(in) << "deploy/ohiod.conf is not in the test's data";
  std::stringstream uncommented;
  std::set<std::string> documented;
  std::regex setting("^#([a-z][a-z_-]*) =(.*)$");
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, setting)) {
      documented.insert(m[1]);
      uncommented << line.substr(1) << "\n";
    }
  }
  const DaemonConfig defaults = Load({"--config="}).config;
  for (const std::string& key : Keys(defaults)) EXPECT_EQ(documented.count(key), 1u) << key << " is not in ohiod.conf";
  for (const std::string& key : documented) EXPECT_EQ(Keys(defaults).count(key), 1u) << key << " is not a setting";

  const ScratchFile conf("ohiod.conf");
  std::ofstream(conf.path()) << uncommented.str();
  auto loaded = Load({"--config", conf.path()});
  ASSERT_FALSE(loaded.exit_now) << loaded.output;
  for (const ConfigChange& c : DiffConfig(defaults, loaded.config)) {
    // The cluster's nodes have no default: the file shows examples of how to name them.
    const bool example = c.key == "peer" || c.key == "peer-hosts" || c.key == "peer-networks";
    EXPECT_TRUE(example) << c.key << " = " << c.to << " in ohiod.conf, but the default is " << c.from;
  }
}

}  // namespace
}  // namespace ohio
