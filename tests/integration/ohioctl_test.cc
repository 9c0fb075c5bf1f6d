// ohioctl against real daemons holding real groups: every command, as text and as JSON (parsed
// and checked against what the jobs did), its exit codes; a daemon that is down; a caller that
// is not root; the health check and the Slurm prolog built on it; the metrics file; and a
// SIGHUP that changes settings.
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "proto/admin.grpc.pb.h"
#include "shm/tables/selection_table.h"
#include "shm/tables/selection_table_text.h"
#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/rank_job.h"
#include "tests/unit/prometheus_text.h"

namespace ohio::testing {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kDeadline = seconds(60);

bool Contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool WaitUntil(const std::function<bool()>& cond, milliseconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return cond();
}

struct CtlRun {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

std::string Quote(const std::string& s) { return "'" + s + "'"; }

// Runs the ohioctl binary with stdout and stderr apart, so that --json output parses alone.
CtlRun RunCtl(const TempDir& dir, const std::vector<std::string>& args) {
  static int n = 0;
  const std::string base = dir.file("ctl" + std::to_string(++n));
  std::string cmd = "exec " + Quote(RunfilePath("client/ohioctl"));
  for (const auto& a : args) cmd += " " + Quote(a);
  cmd += " 2>" + Quote(base + ".err");
  Process p({"/bin/sh", "-c", cmd}, base + ".out");
  CtlRun r;
  r.code = p.Wait(seconds(30));
  r.out = ReadFile(base + ".out");
  r.err = ReadFile(base + ".err");
  return r;
}

// Admin commands of daemon `d`: `--socket` first, then the rest.
CtlRun Ctl(const TempDir& dir, const Daemon& d, std::vector<std::string> args) {
  args.insert(args.begin(), {"--socket", d.admin_socket()});
  return RunCtl(dir, args);
}

bool ParseJson(const std::string& text, json* out) {
  try {
    *out = json::parse(text);
    return true;
  } catch (const json::exception&) {
    return false;
  }
}

std::string Describe(const CtlRun& r) {
  return "exit " + std::to_string(r.code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

// Two daemons, n0 and n1, over loopback (like Cluster), n0 with flags of its own.
class TwoNodes {
 public:
  TwoNodes(const TempDir& dir, const std::vector<std::string>& n0_flags) {
    const auto ports = FreePorts(4);
    std::vector<std::string> peers;
    for (int i = 0; i < 2; ++i) {
      peers.push_back("--peer");
      peers.push_back("n" + std::to_string(i) + "=127.0.0.1:" + std::to_string(ports[2 * i]));
    }
    for (int i = 0; i < 2; ++i) {
      std::vector<std::string> flags = {"--node-name", "n" + std::to_string(i),
                                        "--peer-port", std::to_string(ports[2 * i]),
                                        "--data-port", std::to_string(ports[2 * i + 1])};
      flags.insert(flags.end(), peers.begin(), peers.end());
      if (i == 0) flags.insert(flags.end(), n0_flags.begin(), n0_flags.end());
      nodes_[i] = std::make_unique<Daemon>(dir, flags, "n" + std::to_string(i));
    }
  }
  bool Start() { return nodes_[0]->Start() && nodes_[1]->Start(); }
  Daemon& operator[](int i) { return *nodes_[i]; }
  std::string Logs() const { return nodes_[0]->Log() + "\n--- n1 ---\n" + nodes_[1]->Log(); }

 private:
  std::unique_ptr<Daemon> nodes_[2];
};

// The metrics text carries exactly the counters of the reply.
void ExpectMetricsMatch(const PromText& p, const admin::CountersReply& c) {
  EXPECT_EQ(p.Value("ohio_collectives_served_total"), c.collectives_served());
  EXPECT_EQ(p.Value("ohio_collectives_failed_total"), c.collectives_failed());
  EXPECT_EQ(p.Value("ohio_rounds_total"), c.rounds());
  EXPECT_EQ(p.Value("ohio_bytes_local_total"), c.bytes_local());
  EXPECT_EQ(p.Value("ohio_bytes_sent_total"), c.bytes_sent());
  EXPECT_EQ(p.Value("ohio_bytes_received_total"), c.bytes_received());
  EXPECT_EQ(p.Value("ohio_groups_failed_total"), c.groups_failed());
  ASSERT_EQ(c.errors_size(), 5);
  for (const auto& e : c.errors()) EXPECT_EQ(p.Value("ohio_errors_total", {{"kind", e.kind()}}), e.count()) << e.kind();
  ASSERT_EQ(c.latency_size(), 5);
  for (const auto& l : c.latency()) {
    const std::string h = "ohio_collective_latency_seconds";
    EXPECT_EQ(p.Value(h + "_count", {{"size_class", l.size_class()}}), l.count()) << l.size_class();
    EXPECT_NEAR(p.Value(h + "_sum", {{"size_class", l.size_class()}}), l.sum_seconds(), 1e-6) << l.size_class();
    size_t buckets = 0;
    for (const auto& s : p.families.at(h).samples) {
      if (s.name == h + "_bucket" && s.labels.at("size_class") == l.size_class()) ++buckets;
    }
    EXPECT_EQ(buckets, static_cast<size_t>(l.buckets_size()));
    for (const auto& b : l.buckets()) {
      char le[40];
      std::snprintf(le, sizeof(le), "%.9g", b.le_seconds());
      const std::string bound = std::isinf(b.le_seconds()) ? "+Inf" : le;
      EXPECT_EQ(p.Value(h + "_bucket", {{"size_class", l.size_class()}, {"le", bound}}), b.count()) << bound;
    }
  }
}

bool MetricsMatch(const std::string& text, const admin::CountersReply& c) {
  const PromText p = ParsePrometheusText(text);
  if (!p.ok) return false;
  if (p.Value("ohio_collectives_served_total") != c.collectives_served()) return false;
  for (const auto& l : c.latency()) {
    if (p.Value("ohio_collective_latency_seconds_count", {{"size_class", l.size_class()}}) != l.count()) return false;
  }
  return p.Value("ohio_bytes_sent_total") == c.bytes_sent() &&
         p.Value("ohio_errors_total", {{"kind", "size_mismatch"}}) == c.errors(0).count();
}

const json* GroupByKey(const json& groups, const std::string& key) {
  for (const auto& g : groups) {
    if (g["key"] == key) return &g;
  }
  return nullptr;
}

TEST(Ohioctl, EveryCommandAsTextAndJsonAgainstRealGroups) {
  TempDir dir;
  const std::string prom = dir.file("n0.prom");
  TwoNodes nodes(dir, {"--metrics-file", prom, "--metrics-interval-s", "1"});
  ASSERT_TRUE(nodes.Start()) << nodes.Logs();
  Daemon& n0 = nodes[0];

  // A group across both nodes (2 + 2 ranks), one on n0 only (3 ranks), both kept open after
  // their calls; and a job on n0 whose ranks disagree once on the size.
  RankJob spanning(dir, {n0.socket(), nodes[1].socket()}, {"n0", "n1"}, {0, 0, 1, 1}, "spanning",
                   {"--bytes", "64", "70000", "--iterations", "3", "--stall-after"});
  RankJob local(dir, n0.socket(), "local-job", 3, {"--bytes", "4096", "--iterations", "5", "--stall-after"});
  RankJob mismatch(dir, n0.socket(), "mismatch", 2, {"--bytes", "64", "--expect", "size mismatch"}, [](uint32_t r) {
    return r == 1 ? std::vector<std::string>{"--my-bytes", "128"} : std::vector<std::string>{};
  });
  for (int c : mismatch.Wait(kDeadline)) ASSERT_EQ(c, 0) << mismatch.Outputs();
  for (uint32_t r = 0; r < 4; ++r)
    ASSERT_TRUE(spanning.rank(r).WaitForOutput("stalling", kDeadline)) << spanning.Outputs();
  for (uint32_t r = 0; r < 3; ++r) ASSERT_TRUE(local.rank(r).WaitForOutput("stalling", kDeadline)) << local.Outputs();
  // The mismatch job's ranks are gone once n0 holds just the two other groups.
  ASSERT_TRUE(WaitUntil([&] { return QueryStatus(n0.admin_socket()).reply.groups() == 2; }, seconds(10)));

  // On n0: 3 + 3 spanning calls (64 B and 70000 B per rank), 5 local ones, 1 after the mismatch.
  const uint64_t kServed = 12;
  const uint64_t kRemote = 2 * 2 * (3 * 64 + 3 * 70000);  // 2 ranks here x 2 there x M, both ways
  const uint64_t kLocal = 4 * (3 * 64 + 3 * 70000) + 9 * 4096 * 5 + 4 * 64;

  {  // status
    CtlRun text = Ctl(dir, n0, {"status"});
    ASSERT_EQ(text.code, 0) << Describe(text);
    EXPECT_TRUE(Contains(text.out, "on node n0")) << text.out;
    EXPECT_TRUE(Contains(text.out, "tcp, data address 127.0.0.1:")) << text.out;
    EXPECT_TRUE(Contains(text.out, "libibverbs")) << text.out;
    EXPECT_TRUE(Contains(text.out, "2 open")) << text.out;
    EXPECT_TRUE(Contains(text.out, "1 data connection (n1)")) << text.out;
    EXPECT_TRUE(Contains(text.out, "* timeout-ms")) << text.out;
    EXPECT_TRUE(Contains(text.out, "* selection-table")) << text.out;
    EXPECT_TRUE(Contains(text.out, "selection    the built-in table (digest " +
                                       SelectionTableDigest(DefaultSelectionTable()) + "), for new groups"))
        << text.out;
    CtlRun js = Ctl(dir, n0, {"status", "--json"});
    ASSERT_EQ(js.code, 0) << Describe(js);
    json s;
    ASSERT_TRUE(ParseJson(js.out, &s)) << js.out;
    EXPECT_EQ(s["node"], "n0");
    EXPECT_EQ(s["pid"].get<int>(), n0.pid());
    EXPECT_EQ(s["transport"], "tcp");
    EXPECT_EQ(s["data_address"].get<std::string>().rfind("127.0.0.1:", 0), 0u) << s["data_address"];
    EXPECT_TRUE(s["hcas"].is_array());
    EXPECT_TRUE(Contains(s["hca_note"].get<std::string>(), "libibverbs")) << s["hca_note"];
    EXPECT_EQ(s["groups"], 2);
    EXPECT_EQ(s["group"].size(), 2u);
    EXPECT_EQ(s["data_connections"], 1);
    EXPECT_EQ(s["connected_peers"], json::array({"n1"}));
    EXPECT_EQ(s["collectives_served"].get<uint64_t>(), kServed);
    EXPECT_EQ(s["config"]["node-name"], "n0");
    EXPECT_EQ(s["config"]["metrics-file"], prom);
    EXPECT_EQ(s["config"]["socket"], n0.socket());
    EXPECT_EQ(s["selection_table"], "the built-in table");
    EXPECT_EQ(s["selection_table_digest"], SelectionTableDigest(DefaultSelectionTable()));
    EXPECT_TRUE(s["pending_restart"].empty());
    EXPECT_GT(s["segment_bytes_in_use"].get<uint64_t>(), 0u);
  }
  {  // peers
    CtlRun text = Ctl(dir, n0, {"peers"});
    ASSERT_EQ(text.code, 0) << Describe(text);
    EXPECT_TRUE(Contains(text.out, "n1")) << text.out;
    EXPECT_TRUE(Contains(text.out, "connected")) << text.out;
    json p;
    CtlRun js = Ctl(dir, n0, {"--json", "peers"});
    ASSERT_EQ(js.code, 0) << Describe(js);
    ASSERT_TRUE(ParseJson(js.out, &p)) << js.out;
    ASSERT_EQ(p["peers"].size(), 1u) << p;  // n0 itself is in the peers table but is not a peer
    EXPECT_EQ(p["peers"][0]["node"], "n1");
    EXPECT_EQ(p["peers"][0]["state"], "connected");
    EXPECT_EQ(p["peers"][0]["data_connections"], 1);
    EXPECT_EQ(p["peers"][0]["configured"], true);
    EXPECT_EQ(p["peers"][0]["groups"], 1);
    EXPECT_EQ(p["peers"][0]["link"], "tcp");  // one way to every peer: the transport's name
    EXPECT_EQ(p["peers"][0]["peer_address"].get<std::string>().rfind("127.0.0.1:", 0), 0u);
  }
  {  // groups
    CtlRun text = Ctl(dir, n0, {"groups"});
    ASSERT_EQ(text.code, 0) << Describe(text);
    EXPECT_TRUE(Contains(text.out, KeyHex("spanning"))) << text.out;
    EXPECT_TRUE(Contains(text.out, KeyHex("local-job"))) << text.out;
    EXPECT_TRUE(Contains(text.out, "n0:2 n1:2")) << text.out;
    EXPECT_TRUE(Contains(text.out, "n0:3")) << text.out;
    EXPECT_TRUE(Contains(text.out, KeyHex("spanning") + ": selection table the built-in table (digest " +
                                       SelectionTableDigest(DefaultSelectionTable()) +
                                       "), inter-node table the built-in table (digest "))
        << text.out;
    json g;
    CtlRun js = Ctl(dir, n0, {"groups", "--json"});
    ASSERT_EQ(js.code, 0) << Describe(js);
    ASSERT_TRUE(ParseJson(js.out, &g)) << js.out;
    const json* span = GroupByKey(g["groups"], KeyHex("spanning"));
    const json* loc = GroupByKey(g["groups"], KeyHex("local-job"));
    ASSERT_TRUE(span != nullptr && loc != nullptr) << g;
    EXPECT_EQ((*span)["ranks_per_node"], json::parse(R"([{"node":"n0","ranks":2},{"node":"n1","ranks":2}])"));
    EXPECT_EQ((*span)["sequence"], 6);
    EXPECT_EQ((*span)["size"], 4);
    EXPECT_EQ((*span)["algorithm"], "v3");
    EXPECT_EQ((*span)["selection"], "the built-in table");
    EXPECT_EQ((*span)["selection_digest"], SelectionTableDigest(DefaultSelectionTable()));
    EXPECT_EQ((*loc)["selection_digest"], SelectionTableDigest(DefaultSelectionTable()));
    EXPECT_EQ((*span)["state"], "open");
    EXPECT_EQ((*span)["attached_ranks"], 2);
    EXPECT_GT((*span)["srb_bytes"].get<uint64_t>(), 0u);
    EXPECT_EQ((*span)["owner_uid"].get<uint32_t>(), geteuid());
    EXPECT_EQ((*loc)["ranks_per_node"], json::parse(R"([{"node":"n0","ranks":3}])"));
    EXPECT_EQ((*loc)["sequence"], 5);
    EXPECT_EQ((*loc)["srb_bytes"], 0);
    EXPECT_EQ((*loc)["timeout_ms"], 60000);
    EXPECT_GT((*loc)["segment_bytes"].get<uint64_t>(), (*loc)["ssb_bytes"].get<uint64_t>());
  }
  json counters;
  {  // counters
    CtlRun text = Ctl(dir, n0, {"counters"});
    ASSERT_EQ(text.code, 0) << Describe(text);
    EXPECT_TRUE(Contains(text.out, "12 served, 1 failed")) << text.out;
    EXPECT_TRUE(Contains(text.out, "size_mismatch 1")) << text.out;
    EXPECT_TRUE(Contains(text.out, "1KiB-16KiB")) << text.out;
    CtlRun js = Ctl(dir, n0, {"counters", "--json"});
    ASSERT_EQ(js.code, 0) << Describe(js);
    ASSERT_TRUE(ParseJson(js.out, &counters)) << js.out;
    EXPECT_EQ(counters["collectives_served"].get<uint64_t>(), kServed);
    EXPECT_EQ(counters["collectives_failed"], 1);
    EXPECT_EQ(counters["rounds"].get<uint64_t>(), kServed);
    EXPECT_EQ(counters["bytes_sent"].get<uint64_t>(), kRemote);
    EXPECT_EQ(counters["bytes_received"].get<uint64_t>(), kRemote);
    EXPECT_EQ(counters["bytes_local"].get<uint64_t>(), kLocal);
    EXPECT_EQ(counters["errors"],
              json::parse(R"({"size_mismatch":1,"timeout":0,"group_failed":0,"refused":0,"other":0})"));
    std::map<std::string, uint64_t> per_class;
    uint64_t total = 0;
    for (const auto& l : counters["latency"]) {
      per_class[l["size_class"]] = l["count"];
      total += l["count"].get<uint64_t>();
      EXPECT_EQ(l["buckets"].back()["count"], l["count"]);
      EXPECT_GE(l["sum_seconds"].get<double>(), 0.0);
    }
    EXPECT_EQ(total, kServed);  // every served collective was timed
    EXPECT_EQ(per_class["0-1KiB"], 4u);
    EXPECT_EQ(per_class["1KiB-16KiB"], 5u);
    EXPECT_EQ(per_class["16KiB-256KiB"], 3u);
    EXPECT_EQ(counters["groups"], 2);
    EXPECT_EQ(counters["data_connections"], 1);
    // n1 saw the same remote bytes the other way round.
    const auto n1 = QueryCounters(nodes[1].admin_socket());
    EXPECT_EQ(n1.bytes_sent(), kRemote);
    EXPECT_EQ(n1.bytes_received(), kRemote);
  }
  {  // watch
    CtlRun text = Ctl(dir, n0, {"watch", "--count", "2", "--interval-ms", "100"});
    ASSERT_EQ(text.code, 0) << Describe(text);
    std::istringstream lines(text.out);
    std::string header, first, second, more;
    std::getline(lines, header);
    std::getline(lines, first);
    std::getline(lines, second);
    EXPECT_TRUE(Contains(header, "COLLECTIVES/s")) << text.out;
    EXPECT_TRUE(Contains(first, "totals: 12 collectives")) << text.out;
    EXPECT_FALSE(second.empty()) << text.out;
    EXPECT_FALSE(std::getline(lines, more)) << text.out;
    CtlRun js = Ctl(dir, n0, {"watch", "--json", "--count", "3", "--interval-ms", "50"});
    ASSERT_EQ(js.code, 0) << Describe(js);
    std::istringstream docs(js.out);
    std::string doc;
    int n = 0;
    int64_t last_ms = 0;
    while (std::getline(docs, doc)) {
      json c;
      ASSERT_TRUE(ParseJson(doc, &c)) << doc;
      EXPECT_EQ(c["collectives_served"].get<uint64_t>(), kServed);
      EXPECT_GE(c["unix_time_ms"].get<int64_t>(), last_ms);
      last_ms = c["unix_time_ms"];
      ++n;
    }
    EXPECT_EQ(n, 3) << js.out;
  }
  {  // health
    CtlRun text = Ctl(dir, n0, {"health"});
    EXPECT_EQ(text.code, 0) << Describe(text);
    EXPECT_EQ(text.out.rfind("healthy\n", 0), 0u) << text.out;
    EXPECT_TRUE(Contains(text.out, "the progress engine answers")) << text.out;
    json h;
    CtlRun js = Ctl(dir, n0, {"health", "--json"});
    EXPECT_EQ(js.code, 0) << Describe(js);
    ASSERT_TRUE(ParseJson(js.out, &h)) << js.out;
    EXPECT_EQ(h["healthy"], true);
    EXPECT_TRUE(h["problems"].empty());
    EXPECT_EQ(h["checks"].size(), 2u);
  }
  {  // metrics: what `ohioctl metrics` prints and what ohiod writes both match Counters
    CtlRun text = Ctl(dir, n0, {"metrics"});
    ASSERT_EQ(text.code, 0) << Describe(text);
    const PromText printed = ParsePrometheusText(text.out);
    ASSERT_TRUE(printed.ok) << printed.error;
    const admin::CountersReply now = QueryCounters(n0.admin_socket());
    ExpectMetricsMatch(printed, now);
    // The file is rewritten every second: the next write after the jobs settled matches.
    ASSERT_TRUE(WaitUntil([&] { return MetricsMatch(ReadFile(prom), now); }, seconds(10))) << ReadFile(prom);
    const PromText written = ParsePrometheusText(ReadFile(prom));
    ASSERT_TRUE(written.ok) << written.error;
    ExpectMetricsMatch(written, now);
    struct stat st;
    ASSERT_EQ(stat(prom.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0644u);
    const std::string out = dir.file("printed.prom");
    CtlRun to_file = Ctl(dir, n0, {"metrics", "--output", out});
    ASSERT_EQ(to_file.code, 0) << Describe(to_file);
    EXPECT_TRUE(ParsePrometheusText(ReadFile(out)).ok);
    CtlRun as_json = Ctl(dir, n0, {"metrics", "--json"});
    EXPECT_EQ(as_json.code, 2) << Describe(as_json);
  }
  // Usage errors.
  EXPECT_EQ(Ctl(dir, n0, {}).code, 2);
  EXPECT_EQ(Ctl(dir, n0, {"frobnicate"}).code, 2);
  EXPECT_EQ(Ctl(dir, n0, {"watch", "--interval-ms", "1"}).code, 2);
  CtlRun help = RunCtl(dir, {"--help"});
  EXPECT_EQ(help.code, 0);
  for (const char* cmd : {"status", "peers", "groups", "counters", "watch", "health", "metrics", "Exit codes"}) {
    EXPECT_TRUE(Contains(help.out, cmd)) << cmd << "\n" << help.out;
  }
}

TEST(Ohioctl, SaysTheDaemonIsNotRunning) {
  TempDir dir;
  CtlRun none = RunCtl(dir, {"--socket", dir.file("none.sock"), "status"});
  EXPECT_EQ(none.code, 3) << Describe(none);
  EXPECT_TRUE(Contains(none.err, "ohiod is not running: there is no admin socket " + dir.file("none.sock")))
      << none.err;
  CtlRun none_json = RunCtl(dir, {"--socket", dir.file("none.sock"), "--json", "counters"});
  EXPECT_EQ(none_json.code, 3);
  json j;
  ASSERT_TRUE(ParseJson(none_json.out, &j)) << none_json.out;
  EXPECT_EQ(j["exit_code"], 3);
  EXPECT_TRUE(Contains(j["error"].get<std::string>(), "not running")) << j;

  // A socket left behind by a daemon that died: the file is there, nobody listens.
  const std::string stale = dir.file("stale.sock");
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", stale.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);
  for (const char* cmd : {"status", "peers", "groups", "counters", "watch", "health", "metrics"}) {
    CtlRun r = RunCtl(dir, {"--socket", stale, cmd});
    EXPECT_EQ(r.code, 3) << cmd << ": " << Describe(r);
    EXPECT_TRUE(Contains(r.err, "nothing listens on " + stale)) << cmd << ": " << r.err;
  }

  // A daemon that was running and stopped.
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  EXPECT_EQ(Ctl(dir, daemon, {"health"}).code, 0);
  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
  CtlRun after = Ctl(dir, daemon, {"health"});
  EXPECT_EQ(after.code, 3) << Describe(after);
  EXPECT_TRUE(Contains(after.err, "not running")) << after.err;
}

TEST(Ohioctl, TheAdminSocketRefusesCallersOtherThanRoot) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run ohioctl as another user";
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  struct stat st;
  ASSERT_EQ(stat(daemon.admin_socket().c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(st.st_uid, 0u);
  // The binary must be executable by the other user: copy it out of Bazel's root-only cache.
  const std::string tool = dir.file("ohioctl");
  {
    std::ifstream in(RunfilePath("client/ohioctl"), std::ios::binary);
    std::ofstream out(tool, std::ios::binary);
    out << in.rdbuf();
  }
  ASSERT_EQ(chmod(tool.c_str(), 0755), 0);
  constexpr uid_t kNobody = 65534;
  for (const char* cmd : {"status", "health"}) {
    Process p({tool, "--socket", daemon.admin_socket(), cmd}, dir.file(std::string("nobody-") + cmd + ".out"), kNobody);
    EXPECT_EQ(p.Wait(seconds(30)), 4) << p.Output();
    EXPECT_TRUE(Contains(p.Output(), "permission denied on " + daemon.admin_socket())) << p.Output();
    EXPECT_TRUE(Contains(p.Output(), "run ohioctl as root")) << p.Output();
  }
  // Root still gets its answer.
  EXPECT_EQ(Ctl(dir, daemon, {"status"}).code, 0);
  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
}

// The Slurm prolog example passes a healthy node and fails one whose ohiod cannot serve ranks
// or is not running, saying why.
TEST(Ohioctl, HealthAndTheSlurmPrologFailANodeThatCannotServe) {
  TempDir dir;
  Daemon daemon(dir);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  setenv("OHIOCTL", RunfilePath("client/ohioctl").c_str(), 1);
  setenv("OHIO_ADMIN_SOCKET", daemon.admin_socket().c_str(), 1);
  auto prolog = [&](const std::string& name) {
    Process p({"/bin/bash", RunfilePath("deploy/slurm-prolog.sh")}, dir.file(name));
    const int code = p.Wait(seconds(60));
    return std::make_pair(code, p.Output());
  };
  auto healthy = prolog("prolog-healthy.out");
  EXPECT_EQ(healthy.first, 0) << healthy.second;

  // Someone removed the control socket: ranks cannot reach the daemon.
  ASSERT_EQ(unlink(daemon.socket().c_str()), 0);
  CtlRun text = Ctl(dir, daemon, {"health"});
  EXPECT_EQ(text.code, 1) << Describe(text);
  EXPECT_EQ(text.err.rfind("UNHEALTHY\n", 0), 0u) << text.err;
  EXPECT_TRUE(Contains(text.err, "problem: ranks cannot reach ohiod")) << text.err;
  EXPECT_TRUE(Contains(text.err, daemon.socket())) << text.err;
  CtlRun js = Ctl(dir, daemon, {"health", "--json"});
  EXPECT_EQ(js.code, 1) << Describe(js);
  json h;
  ASSERT_TRUE(ParseJson(js.out, &h)) << js.out;
  EXPECT_EQ(h["healthy"], false);
  ASSERT_EQ(h["problems"].size(), 1u);
  EXPECT_TRUE(Contains(h["problems"][0].get<std::string>(), "ranks cannot reach ohiod"));
  auto unhealthy = prolog("prolog-unhealthy.out");
  EXPECT_EQ(unhealthy.first, 1) << unhealthy.second;
  EXPECT_TRUE(Contains(unhealthy.second, "ohio: ohioctl health exit 1")) << unhealthy.second;
  EXPECT_TRUE(Contains(unhealthy.second, "ranks cannot reach ohiod")) << unhealthy.second;

  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
  auto down = prolog("prolog-down.out");
  EXPECT_EQ(down.first, 1) << down.second;
  EXPECT_TRUE(Contains(down.second, "ohioctl health exit 3")) << down.second;
  EXPECT_TRUE(Contains(down.second, "not running")) << down.second;
  unsetenv("OHIOCTL");
  unsetenv("OHIO_ADMIN_SOCKET");
}

// SIGHUP re-reads the config file: reloadable settings apply (timeout-ms for groups created
// afterwards, spin-us), the others are logged and shown as waiting for a restart, a flag still
// beats the file, and a broken file changes nothing.
TEST(Ohioctl, SighupReloadsWhatItCanAndSaysWhatNeedsARestart) {
  TempDir dir;
  const std::string conf = dir.file("ohiod.conf");
  std::ofstream(conf) << "timeout-ms = 60000\nspin-us = 50\nlog-level = warn\n";
  Daemon daemon(dir, {"--config", conf});
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  json s;
  ASSERT_TRUE(ParseJson(Ctl(dir, daemon, {"status", "--json"}).out, &s));
  EXPECT_EQ(s["config"]["timeout-ms"], "60000");
  EXPECT_EQ(s["config"]["log-level"], "debug");  // the harness's --log-level flag beats the file
  EXPECT_EQ(s["config_file"], conf);
  EXPECT_EQ(s["last_reload"], "");

  const std::string prom = dir.file("reloaded.prom");
  std::ofstream(conf) << "timeout-ms = 1500\nspin-us = 7\nlog-level = error\nmemory-limit = 512MiB\n"
                      << "metrics-file = " << prom << "\nmetrics-interval-s = 1\n";
  ASSERT_EQ(kill(daemon.pid(), SIGHUP), 0);
  ASSERT_TRUE(WaitUntil(
      [&] {
        return ParseJson(Ctl(dir, daemon, {"status", "--json"}).out, &s) && s["config"]["timeout-ms"] == "1500";
      },
      seconds(10)))
      << s << daemon.Log();
  EXPECT_EQ(s["config"]["spin-us"], "7");
  EXPECT_EQ(s["config"]["log-level"], "debug");
  EXPECT_EQ(s["config"]["memory-limit"], "1073741824");                             // still in force...
  EXPECT_EQ(s["pending_restart"], json::parse(R"({"memory-limit":"536870912"})"));  // ...until a restart
  EXPECT_TRUE(Contains(s["last_reload"].get<std::string>(),
                       "applied metrics-file, metrics-interval-s, spin-us, timeout-ms; needs a restart: memory-limit"))
      << s;
  // The metrics file the reload asked for is being written.
  EXPECT_TRUE(WaitUntil(
      [&] {
        const PromText p = ParsePrometheusText(ReadFile(prom));
        return p.ok && p.Value("ohio_collectives_served_total") == 0;
      },
      seconds(10)))
      << daemon.Log();
  EXPECT_TRUE(Contains(daemon.Log(), "SIGHUP: timeout-ms = 1500 (was 60000)")) << daemon.Log();
  EXPECT_TRUE(Contains(daemon.Log(), "SIGHUP: memory-limit = 536870912 needs a restart of ohiod")) << daemon.Log();
  CtlRun status = Ctl(dir, daemon, {"status"});
  EXPECT_TRUE(Contains(status.out, "config now says 536870912: needs a restart")) << status.out;
  json h;
  CtlRun health = Ctl(dir, daemon, {"health", "--json"});
  EXPECT_EQ(health.code, 0) << Describe(health);
  ASSERT_TRUE(ParseJson(health.out, &h));
  ASSERT_EQ(h["warnings"].size(), 1u) << h;
  EXPECT_TRUE(Contains(h["warnings"][0].get<std::string>(), "memory-limit = 536870912, which takes a restart")) << h;

  // A group created now gets the new timeout: its rank that never arrives fails it after 1.5 s.
  RankJob job(dir, daemon.socket(), "after-reload", 2, {"--bytes", "64", "--expect", "timeout"},
              [](uint32_t r) { return r == 1 ? std::vector<std::string>{"--stall"} : std::vector<std::string>{}; });
  EXPECT_EQ(job.rank(0).Wait(kDeadline), 0) << job.Outputs();
  EXPECT_TRUE(Contains(job.rank(0).Output(), "rank 1 did not enter the alltoall within 1500 ms")) << job.Outputs();
  job.rank(1).Signal(SIGKILL);
  job.Wait(seconds(10));

  // A broken file: the reload fails, says why, and the settings stay.
  std::ofstream(conf) << "timeout-ms = soon\n";
  ASSERT_EQ(kill(daemon.pid(), SIGHUP), 0);
  ASSERT_TRUE(WaitUntil(
      [&] {
        return ParseJson(Ctl(dir, daemon, {"status", "--json"}).out, &s) &&
               s["last_reload"].get<std::string>().rfind("reload failed", 0) == 0;
      },
      seconds(10)))
      << s;
  EXPECT_TRUE(Contains(s["last_reload"].get<std::string>(), "--timeout-ms")) << s;
  EXPECT_EQ(s["config"]["timeout-ms"], "1500");
  EXPECT_TRUE(Contains(daemon.Log(), "SIGHUP: cannot reload")) << daemon.Log();
  EXPECT_EQ(Ctl(dir, daemon, {"health"}).code, 0);
  EXPECT_EQ(daemon.Stop(), 0) << daemon.Log();
}

}  // namespace
}  // namespace ohio::testing
