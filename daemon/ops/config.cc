#include "daemon/ops/config.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "common/version.h"
#include "daemon/ops/address_ranges.h"
#include "daemon/ops/host_pattern.h"
#include "shm/plan/node_level_design.h"
#include "shm/tables/internode_table_text.h"
#include "shm/tables/selection_table_text.h"

namespace ohio {
namespace {

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

std::string EnvName(const std::string& key) {
  std::string env = "OHIOD_";
  for (char c : key) env += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return env;
}

// CLI11 converts with strtoull, which turns "-1" into 2^64-1: refuse a sign before the size
// transform sees the text.
const CLI::Validator kNotNegative(
    [](std::string& v) {
      auto first = v.find_first_not_of(" \t");
      return first != std::string::npos && v[first] == '-' ? "a size cannot be negative: " + v : std::string();
    },
    "SIZE");

// "auto", or a decimal number of CPUs above 0 (at most what a host could have).
const CLI::Validator kCpus(
    [](std::string& v) {
      if (v == "auto") return std::string();
      char* end = nullptr;
      const double cpus = std::strtod(v.c_str(), &end);
      if (v.empty() || end != v.c_str() + v.size() || !(cpus > 0) || cpus > 65536 ||
          v.find_first_of("xX") != std::string::npos) {
        return "expected auto or a number of CPUs above 0, e.g. 0.125, got '" + v + "'";
      }
      return std::string();
    },
    "auto|CPUS");

// Direct's window: at least one put, and no more than any node could usefully keep in flight
// (beyond the peers a node has it is pairwise, posting everything at once).
constexpr uint32_t kMaxDirectWindow = 1024;
const CLI::Validator kDirectWindow(
    [](std::string& v) {
      // Digits only: strtoull would take "-1" as 2^64-1 and " 4" as 4.
      const bool digits = !v.empty() && v.size() <= 9 && v.find_first_not_of("0123456789") == std::string::npos;
      const unsigned long long w = digits ? std::strtoull(v.c_str(), nullptr, 10) : 0;
      if (w < 1 || w > kMaxDirectWindow) {
        return "expected the most puts the direct algorithm keeps in flight from a node, 1 to " +
               std::to_string(kMaxDirectWindow) + ", got '" + v + "'";
      }
      return std::string();
    },
    "1.." + std::to_string(kMaxDirectWindow));

// The RTR budget: up to half of what a dialling daemon waits for the answer, which a budget
// longer than that would let pass before the accepting daemon answers.
const CLI::Validator kRtrRetryBudget(
    [](std::string& v) {
      const long longest = static_cast<long>(kLongestRtrRetryBudget.count());
      // Digits only: strtoull would take "-1" as 2^64-1 and " 4" as 4.
      const bool digits = !v.empty() && v.size() <= 9 && v.find_first_not_of("0123456789") == std::string::npos;
      if (!digits || std::strtol(v.c_str(), nullptr, 10) > longest) {
        return "expected milliseconds from 0 (one attempt) to " + std::to_string(longest) +
               " (half the 10 s a dialling node waits for this node's answer), got '" + v + "'";
      }
      return std::string();
    },
    "0.." + std::to_string(kLongestRtrRetryBudget.count()));

// Test hooks: taken on the command line, in the file and from the environment like any setting,
// but no setting an operator should turn, so --help leaves them out. They are hidden only when
// the help is printed: CLI11 hides the options of the empty group, but also drops their names
// from its error messages.
constexpr const char* kTestHooks = "Test hooks";

void Bind(CLI::App& app, DaemonConfig& c, std::string& config_file) {
  app.add_option("--config", config_file,
                 std::string("Config file (key = value lines; default ") + kDefaultConfigFile + " if present)");
  app.add_option("--node-name", c.node_name, "This node's name as peers and groups know it (default: host name)");
  app.add_option("--socket", c.socket,
                 "Unix socket where MPI ranks reach the daemon (only a stale socket there is replaced)")
      ->capture_default_str();
  app.add_option("--log-level", c.log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
  app.add_option("--ssb-bytes", c.ssb_bytes,
                 "Shared send buffer per group and node; larger alltoalls are staged in rounds (e.g. 16MiB)")
      ->check(kNotNegative)
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--srb-bytes", c.srb_bytes, "Shared receive buffer per group and node (multi-node groups)")
      ->check(kNotNegative)
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--min-slice-bytes", c.min_slice_bytes,
                 "Shortest slice of a message a staged round copies: smaller SSBs cut rounds by ranks and nodes "
                 "rather than slices; a group spanning nodes plans with the smallest of its nodes' (0: no minimum)")
      ->check(kNotNegative)
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--memory-limit", c.memory_limit, "Shared memory all groups of this node may use together")
      ->check(kNotNegative)
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--registered-memory-limit", c.registered_memory_limit,
                 "Memory kept registered with the transport: the segments of open groups spanning nodes plus "
                 "those of ended groups, cached for the next group of the same uid and sizes; the least recently "
                 "used cached ones are evicted to stay under it (0: cache none)")
      ->check(kNotNegative)
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--timeout-ms", c.timeout_ms,
                 "How long a collective waits for every rank of the group before the group is failed (also: how "
                 "long a new group waits for its other nodes to answer and its data connections to them to come "
                 "up; its first round begins once every node has, and its timer with it)")
      ->check(CLI::Range(1u, 86400000u))
      ->capture_default_str();
  app.add_option("--spin-us", c.spin_us,
                 "How long the progress engine spins for new work before sleeping, unless the node has more than 8 "
                 "processes (ranks and engine) per CPU (see --cpus); when they outnumber the CPUs it yields between "
                 "passes, and spins only while ranks may wait for it in a blocking call across nodes")
      ->check(CLI::Range(0u, 100000u))
      ->capture_default_str();
  app.add_option("--round-spin-us", c.round_spin_us,
                 "While a round spanning nodes is under way and the node has a CPU to spare (its open groups' ranks "
                 "plus the engine fit in --cpus), how long the progress engine spins without yielding before it "
                 "sleeps")
      ->check(CLI::Range(0u, 100000u))
      ->capture_default_str();
  app.add_option("--cpus", c.cpus,
                 "CPUs this node's daemon and ranks may count as their own: auto (the CPUs of ohiod's affinity "
                 "mask, bounded by its cgroup's CPU quota) or a number, e.g. 0.125 for one of 16 nodes emulated on "
                 "2 cores. With more than 8 of the node's processes (ranks and engine) per CPU neither the engine "
                 "nor the ranks spin: every wait sleeps at once. Ranks learn it when they join")
      ->check(kCpus)
      ->capture_default_str();
  app.add_option("--design", c.design,
                 "Node-level design when the ranks ask for none: v1, v2 or v3 (also read under its former name, "
                 "algorithm)")
      ->check(CLI::IsMember({"v1", "v2", "v3"}))
      ->capture_default_str();
  app.add_option("--internode-table", c.internode_table,
                 "File of the table by which the daemons of a group choose their inter-node algorithm for each call "
                 "(rows 'nodes max-block algorithm', see docs/PLANNER.md); empty: the built-in table. Every node of a "
                 "group must have the same table: a node with another refuses the group at setup. Also read as "
                 "leader-table, its former name");
  app.add_option("--internode-algorithm", c.internode,
                 "Inter-node algorithm: auto (by the inter-node table) or pairwise, hypercube, direct for every call; a "
                 "job's ranks may force one with OHIO_INTERNODE_ALGORITHM. Every node of a group must choose alike")
      ->check(CLI::IsMember({"auto", "pairwise", "hypercube", "direct"}))
      ->capture_default_str();
  app.add_option("--direct-window", c.direct_window,
                 "The most puts the direct inter-node algorithm keeps in flight from this node at once (in the pairwise "
                 "schedule's order, so no node receives much more than this at once). Only the sender obeys it: the "
                 "nodes of a group need not agree")
      ->check(kDirectWindow)
      ->capture_default_str();
  app.add_option("--selection-table", c.selection_table,
                 "File of the table by which ranks choose, per MPI function and call shape, whether ohio serves a "
                 "call or hands it to the MPI library (rows 'function nodes ppn transport bytes path', see "
                 "shm/tables/selection_table_text.h); empty: the built-in table. Every node of a group must have the "
                 "same rows: a node with others refuses the group at setup. SIGHUP reads it again for the groups "
                 "created afterwards; open groups keep theirs");
  app.add_option("--max-message-bytes", c.max_message_bytes, "Largest control message accepted from a client")
      ->check(kNotNegative)
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(uint64_t{1024}, uint64_t{1} << 30))
      ->capture_default_str();
  app.add_option("--max-group-ranks", c.max_group_ranks, "Largest group (ranks in all) a client may join")
      ->check(CLI::Range(1u, 1u << 24))
      ->capture_default_str();
  app.add_option("--max-clients", c.max_clients, "Most client connections served at once")
      ->check(CLI::Range(1u, 1u << 20))
      ->capture_default_str();
  app.add_option("--user-memory-percent", c.user_memory_percent,
                 "Share of memory-limit the groups of one uid may use together, in percent")
      ->check(CLI::Range(1u, 100u))
      ->capture_default_str();
  app.add_option("--user-max-groups", c.user_max_groups, "Most groups one uid may have open on this node")
      ->check(CLI::Range(1u, 1u << 20))
      ->capture_default_str();
  app.add_option("--user-max-clients", c.user_max_clients, "Most client connections of one uid served at once")
      ->check(CLI::Range(1u, 1u << 20))
      ->capture_default_str();
  app.add_option("--user-max-pending-bytes", c.user_max_pending_bytes,
                 "Memory one uid's connections may hold together in ohiod for control messages still arriving "
                 "(announced, not all sent); a client that would pass it is disconnected. At least "
                 "max-message-bytes + 64KiB")
      ->check(kNotNegative)
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--max-pending-bytes", c.max_pending_bytes,
                 "Memory all clients may hold together in ohiod for control messages still arriving; a client "
                 "that would pass it is disconnected. At least max-message-bytes + 64KiB")
      ->check(kNotNegative)
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--hello-timeout-ms", c.hello_timeout_ms,
                 "How long a new connection to the control socket or the data port has to say hello (on the data "
                 "port: with its credential), and one to the peer port to make a call whose credential passes, "
                 "before it is closed")
      ->check(CLI::Range(100u, 600000u))
      ->capture_default_str();
  app.add_option("--control-frame-timeout-ms", c.control_frame_timeout_ms,
                 "How long a client of the control socket may take to send one message, from its first byte to its "
                 "last; a client that does not finish in time is told why and disconnected")
      ->check(CLI::Range(100u, 600000u))
      ->capture_default_str();
  app.add_option("--max-unauthenticated-data-connections", c.max_unauthenticated_data_connections,
                 "Most connections to the data port that have not said hello yet; one address may hold half of "
                 "them. Further ones are closed as they come")
      ->check(CLI::Range(2u, 1u << 20))
      ->capture_default_str();
  app.add_option("--max-unauthenticated-peer-connections", c.max_unauthenticated_peer_connections,
                 "Most connections to the peer port on which no call has passed the credential check yet; one "
                 "address may hold half of them. Further ones are closed as they come")
      ->check(CLI::Range(2u, 1u << 20))
      ->capture_default_str();
  app.add_option("--data-frame-timeout-ms", c.data_frame_timeout_ms,
                 "How long a data connection may take to finish a frame it has begun before it is closed (a frame "
                 "is at most srb-bytes of payload: keep it above what that takes on the slowest link)")
      ->check(CLI::Range(100u, 600000u))
      ->capture_default_str();
  app.add_option("--peer-connection-idle-ms", c.peer_connection_idle_ms,
                 "A connection to the peer port with no call under way this long is closed (the peer opens another "
                 "when it next calls); peers close their own channels after peer-channel-idle-s")
      ->check(CLI::Range(1000u, 86400000u))
      ->capture_default_str();
  app.add_option("--peer-service-threads", c.peer_service_threads,
                 "Threads the peer service runs calls on at most; calls beyond them are refused as exhausted and "
                 "their callers retry")
      ->check(CLI::Range(4u, 4096u))
      ->capture_default_str();
  app.add_option("--peer", c.peers,
                 "Another node's peer service as NAME=HOST:PORT (repeat, or comma-separate in the file). ohiod "
                 "calls only the nodes listed here or admitted by peer-hosts: a group naming any other node is "
                 "refused")
      ->delimiter(',')
      ->check([](const std::string& v) {
        auto eq = v.find('=');
        auto colon = v.rfind(':');
        return eq == std::string::npos || eq == 0 || colon == std::string::npos || colon < eq || colon + 1 == v.size()
                   ? "expected NAME=HOST:PORT, got '" + v + "'"
                   : std::string();
      });
  app.add_option("--peer-hosts", c.peer_hosts,
                 "Names of the other nodes not in the peers table, found by DNS on peer-port: Slurm hostlists "
                 "and globs, comma-separated, e.g. node[001-128],gpu*; empty: only the peers table's nodes")
      ->check([](const std::string& v) {
        auto parsed = HostPatterns::Parse(v);
        return parsed.ok() ? std::string() : parsed.status().message();
      });
  app.add_option("--peer-networks", c.peer_networks,
                 "Networks (CIDR, comma-separated, e.g. 10.1.0.0/16) that the DNS addresses of nodes admitted by "
                 "peer-hosts must lie in; a node resolved elsewhere is not called. Empty: any address")
      ->check([](const std::string& v) {
        auto parsed = AddressRanges::Parse(v);
        return parsed.ok() ? std::string() : parsed.status().message();
      });
  app.add_option("--peer-calls-at-once", c.peer_calls_at_once,
                 "Peer calls (group setup between daemons) made at once, each to another node, never two to one "
                 "node: a node that does not answer holds one of them for a second at most")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  app.add_option("--peer-channel-idle-s", c.peer_channel_idle_s,
                 "Seconds after which the connection to a peer node's service that no group setup used is closed")
      ->check(CLI::Range(1u, 86400u))
      ->capture_default_str();
  app.add_option("--listen", c.listen, "IPv4 address the peer service and the data port listen on")
      ->capture_default_str();
  app.add_option("--peer-port", c.peer_port, "TCP port of the peer service (gRPC)")->capture_default_str();
  app.add_option("--data-port", c.data_port, "TCP port of the data transport")->capture_default_str();
  app.add_option("--advertise", c.advertise, "Host other nodes reach this node's data port at (default: node name)");
  app.add_option("--auth", c.auth,
                 "How other nodes' daemons are authenticated: munge (a MUNGE credential on every peer call and "
                 "data connection, checked against this node's munged) or none (anyone who reaches the peer and "
                 "data ports is trusted; only as an explicit choice)")
      ->check(CLI::IsMember({"munge", "none"}))
      ->capture_default_str();
  app.add_option("--munge-socket", c.munge_socket, "Socket of the local munged (auth = munge)")
      ->capture_default_str();
  app.add_option("--transport", c.transport,
                 "Data transport between nodes: verbs (RDMA), tcp, or auto (verbs when an RDMA port is active)")
      ->check(CLI::IsMember({"auto", "verbs", "tcp"}))
      ->capture_default_str();
  app.add_option("--hca", c.hcas,
                 "RDMA device or device:port the verbs transport uses as a rail (repeat, or comma-separate in the "
                 "file); default: every active port")
      ->delimiter(',');
  app.add_option("--gid-index", c.gid_index, "GID index of every rail (RoCE: the index of the address to use)")
      ->check(CLI::Range(0u, 255u))
      ->capture_default_str();
  app.add_option("--registration-delay-ms", c.registration_delay_ms,
                 "Hold every memory registration back this long; groups use bounce buffers meanwhile (for testing "
                 "that path, or to mimic HCAs where pinning is slow)")
      ->check(CLI::Range(0u, 600000u))
      ->capture_default_str();
  app.add_option("--rc-pool", c.rc_pool,
                 "RC queue pairs per rail, at most: the peer nodes with the most traffic get one (the first "
                 "connected until traffic is measured), every other peer is reached over the rail's one UD queue "
                 "pair (0: every peer over UD; unlimited: one RC queue pair per peer node, no UD)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v == "unlimited") return "";
            if (v.empty() || v.size() > 7 || v.find_first_not_of("0123456789") != std::string::npos) {
              return "rc-pool must be a number of queue pairs (at most 9999999) or unlimited, not '" + v + "'";
            }
            return "";
          },
          "N|unlimited"))
      ->capture_default_str();
  app.add_option("--rc-pool-interval-ms", c.rc_pool_interval_ms,
                 "How often the RC pool is planned from the traffic to each peer: the busiest peers are moved to RC "
                 "and idle or quieter ones to UD, with hysteresis, while jobs run (0: never; the first peers "
                 "connected keep the pool)")
      ->check(CLI::Range(0u, 3600000u))
      ->capture_default_str();
  app.add_option("--drop-one-datagram-in", c.drop_one_datagram_in,
                 "Drop one datagram in this many, at random, as it arrives over UD (0: none), so that the reliability that "
                 "sends them again can be seen at work on a fabric that loses nothing (for tests)")
      ->check(CLI::Range(0u, 1000000u))
      ->capture_default_str()
      ->group(kTestHooks);
  app.add_option("--rtr-retry-budget-ms", c.rtr_retry_budget_ms,
                 "verbs: how long the queue pairs of one connection to a peer, every rail together, may try the move "
                 "to ready-to-receive again while the peer's address is not resolved yet (RoCE: the kernel waits a "
                 "second per attempt for the neighbour entry); 0: one attempt. At most " +
                     std::to_string(kLongestRtrRetryBudget.count()) +
                     ", half the 10 s a dialling node waits for the answer")
      ->check(kRtrRetryBudget)
      ->capture_default_str();
  app.add_option("--topology-xml", c.topology_xml,
                 "Plan where groups' segments go and the order of their rails for the machine this hwloc XML file "
                 "describes, not this one (for tests and debugging; segments are still bound on this machine, "
                 "which refuses NUMA nodes it lacks); empty: this machine");
  app.add_option("--admin-socket", c.admin_socket, "Unix socket of the admin service (root only)")
      ->capture_default_str();
  app.add_option("--metrics-file", c.metrics_file,
                 "Write Prometheus metrics (node_exporter textfile format) to this file every metrics-interval-s, "
                 "e.g. /var/lib/prometheus/node-exporter/ohiod.prom; empty: none");
  app.add_option("--metrics-interval-s", c.metrics_interval_s, "Seconds between two writes of the metrics file")
      ->check(CLI::Range(1u, 3600u))
      ->capture_default_str();
}

bool SkippedKey(const std::string& key) { return key.empty() || key == "config" || key == "help" || key == "version"; }

// "--config FILE" or "--config=FILE" on the command line, else the default file if present.
Result<std::string> FindConfigFile(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--config") {
      if (i + 1 >= argc) return Status(Code::kInvalidArgument, "--config needs a file name");
      return std::string(argv[i + 1]);
    }
    if (a.rfind("--config=", 0) == 0) return a.substr(9);  // empty: no file at all
  }
  if (access(kDefaultConfigFile, F_OK) == 0) return std::string(kDefaultConfigFile);
  return std::string();
}

// One setting as it reaches the parser, and where it came from ("FILE:LINE", "OHIOD_KEY in the
// environment"; empty for the command line, whose errors need no pointer).
struct SourcedArg {
  std::string arg;
  std::string origin;
};

Status ReadConfigFile(const CLI::App& app, const std::string& path, std::vector<SourcedArg>* args) {
  std::ifstream in(path);
  if (!in) return Status(Code::kInvalidArgument, "cannot read config file " + path);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    auto hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(" \t\r"));
      s.erase(s.find_last_not_of(" \t\r") + 1);
      return s;
    };
    line = trim(line);
    if (line.empty()) continue;
    auto eq = line.find('=');
    const std::string where = path + ":" + std::to_string(lineno);
    if (eq == std::string::npos) return Status(Code::kInvalidArgument, where + ": expected 'key = value'");
    std::string key = trim(line.substr(0, eq));
    std::string value = trim(line.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    std::replace(key.begin(), key.end(), '_', '-');
    // Config files written before these two settings were named for the inter-node algorithm.
    if (key == "leader") key = "internode-algorithm";
    if (key == "leader-table") key = "internode-table";
    if (key == "algorithm") key = "design";  // the node-level design's former name
    // help and version are answers, not settings: in a file they would stop ohiod with exit 0.
    if (SkippedKey(key) || app.get_option_no_throw("--" + key) == nullptr) {
      return Status(Code::kInvalidArgument, where + ": unknown key '" + key + "'");
    }
    // "key =" leaves the default; CLI11 would read an empty "--key=" as wanting the next word.
    if (value.empty()) continue;
    args->push_back({"--" + key + "=" + value, where});
  }
  return Status::Ok();
}

// After a parse of every source together failed: the first setting of a file or the environment
// that fails on its own, as "ORIGIN: error", so that an admin is sent to the line to fix. Empty
// if the error lies on the command line (its message names the flag, which is where it is).
std::string FirstBadSetting(const std::vector<SourcedArg>& args) {
  for (const SourcedArg& a : args) {
    if (a.origin.empty()) continue;
    CLI::App probe;
    DaemonConfig scratch;
    std::string scratch_file;
    Bind(probe, scratch, scratch_file);
    try {
      probe.parse(std::vector<std::string>{a.arg});
    } catch (const CLI::ParseError& e) {
      return a.origin + ": " + e.what();
    }
  }
  return "";
}

// A table file named by a setting, parsed by `parse` (whose errors name the file and line);
// `what` names the table when the file cannot be read ("inter-node table").
template <typename Table>
Result<Table> ReadTableFile(const std::string& path, const char* what,
                            Result<Table> (*parse)(const std::string&, const std::string&)) {
  std::ifstream in(path);
  if (!in) return Status(Code::kInvalidArgument, std::string("cannot read ") + what + " " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

}  // namespace

ConfigOutcome LoadDaemonConfig(int argc, const char* const* argv) {
  ConfigOutcome out;
  CLI::App app("ohiod: node-level alltoall daemon. Settings come from the config file, then OHIOD_<KEY> "
               "environment variables, then these flags; the last one wins.",
               "ohiod");
  std::string config_file;
  Bind(app, out.config, config_file);
  app.set_version_flag("--version", std::string("ohiod ") + kVersion);
  for (CLI::Option* opt : app.get_options()) {
    // Later sources override earlier ones; only the lists (--peer, --hca) accumulate.
    const std::string key = opt->get_single_name();
    if (key != "peer" && key != "hca") opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }

  auto fail = [&](const std::string& message) {
    out.exit_now = true;
    out.exit_code = 2;
    out.output = "ohiod: " + message + "\n";
    return out;
  };

  std::vector<SourcedArg> sourced;
  auto file = FindConfigFile(argc, argv);
  if (!file.ok()) return fail(file.status().message());
  if (!file.value().empty()) {
    Status s = ReadConfigFile(app, file.value(), &sourced);
    if (!s.ok()) return fail(s.message());
  }
  for (CLI::Option* opt : app.get_options()) {
    std::string key = opt->get_single_name();
    if (SkippedKey(key)) continue;
    const char* v = std::getenv(EnvName(key).c_str());
    if (v != nullptr && *v != '\0') sourced.push_back({"--" + key + "=" + v, EnvName(key) + " in the environment"});  // empty: as if unset
  }
  // The design's former name, still read where the new one is not set.
  const char* former = std::getenv("OHIOD_ALGORITHM");
  const char* design = std::getenv("OHIOD_DESIGN");
  if (former != nullptr && *former != '\0' && (design == nullptr || *design == '\0')) {
    sourced.push_back({std::string("--design=") + former, "OHIOD_ALGORITHM in the environment"});
  }
  // --config was resolved above; CLI11 would read an empty "--config=" as wanting the next word.
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--config") {
      ++i;
      continue;
    }
    if (a.rfind("--config=", 0) == 0) continue;
    // The node-level design's former name.
    if (a == "--algorithm" || a.rfind("--algorithm=", 0) == 0) {
      sourced.push_back({"--design" + a.substr(std::string("--algorithm").size()), ""});
      continue;
    }
    sourced.push_back({a, ""});
  }
  std::vector<std::string> args;
  for (auto it = sourced.rbegin(); it != sourced.rend(); ++it) args.push_back(it->arg);  // CLI11 takes them reversed
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    for (CLI::Option* opt : app.get_options()) {
      if (opt->get_group() == kTestHooks) opt->group("");  // CLI11 leaves the empty group out
    }
    out.exit_now = true;
    out.output = app.help();
    return out;
  } catch (const CLI::CallForVersion& v) {
    out.exit_now = true;
    out.output = std::string("ohiod ") + kVersion + "\n";
    return out;
  } catch (const CLI::ParseError& e) {
    const std::string sourced_error = FirstBadSetting(sourced);
    return fail(sourced_error.empty() ? e.what() : sourced_error);
  }
  // A whole message must fit, with the rest of one read (64 KiB) that may follow it.
  for (const auto& [key, bound] : {std::pair<const char*, uint64_t>{"user-max-pending-bytes",
                                                                     out.config.user_max_pending_bytes},
                                   {"max-pending-bytes", out.config.max_pending_bytes}}) {
    if (bound < out.config.max_message_bytes + kControlReadBytes) {
      return fail(std::string(key) + " = " + std::to_string(bound) + " is less than max-message-bytes + 64KiB = " +
                  std::to_string(out.config.max_message_bytes + kControlReadBytes) +
                  ": a client could not send a message of the largest size");
    }
  }
  out.config.config_file = file.value();
  if (!out.config.internode_table.empty()) {
    auto rules = ReadTableFile(out.config.internode_table, "inter-node table", ParseInterNodeTable);
    if (!rules.ok()) return fail(rules.status().message());
    out.config.internode_rules = std::move(rules).value();
  }
  if (!out.config.selection_table.empty()) {
    auto rules = ReadTableFile(out.config.selection_table, "selection table", ParseSelectionTable);
    if (!rules.ok()) return fail(rules.status().message());
    out.config.selection_rules = std::move(rules).value();
  }
  if (!out.config.peer_networks.empty() && out.config.peer_hosts.empty()) {
    return fail("peer-networks restricts the DNS addresses of the nodes peer-hosts admits, and peer-hosts is not "
                "set: set it too (e.g. peer-hosts = node[001-128], or * for any name DNS places inside the "
                "networks)");
  }
  if (out.config.node_name.empty()) out.config.node_name = HostName();
  if (out.config.advertise.empty()) out.config.advertise = out.config.node_name;
  return out;
}

std::vector<std::pair<std::string, std::string>> ConfigEntries(const DaemonConfig& config) {
  // Read back through the same bindings the parser uses, so no setting can be left out.
  DaemonConfig copy = config;
  std::string config_file;
  CLI::App app;
  Bind(app, copy, config_file);
  std::vector<std::pair<std::string, std::string>> out;
  for (CLI::Option* opt : app.get_options()) {
    const std::string key = opt->get_single_name();
    if (SkippedKey(key)) continue;
    if (key == "peer" || key == "hca") {
      std::string joined;
      for (const auto& p : key == "peer" ? copy.peers : copy.hcas) joined += (joined.empty() ? "" : ",") + p;
      out.emplace_back(key, joined);
      continue;
    }
    opt->capture_default_str();
    out.emplace_back(key, opt->get_default_str());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool IsReloadable(const std::string& key) {
  static const char* const kReloadable[] = {"log-level",    "timeout-ms",         "spin-us",        "round-spin-us",
                                            "metrics-file", "metrics-interval-s", "selection-table"};
  return std::find(std::begin(kReloadable), std::end(kReloadable), key) != std::end(kReloadable);
}

void ApplyReloadable(const DaemonConfig& next, DaemonConfig* running) {
  running->log_level = next.log_level;
  running->timeout_ms = next.timeout_ms;
  running->spin_us = next.spin_us;
  running->round_spin_us = next.round_spin_us;
  running->metrics_file = next.metrics_file;
  running->metrics_interval_s = next.metrics_interval_s;
  running->selection_table = next.selection_table;
  running->selection_rules = next.selection_rules;
}

std::vector<ConfigChange> DiffConfig(const DaemonConfig& from, const DaemonConfig& to) {
  const auto a = ConfigEntries(from);
  const auto b = ConfigEntries(to);
  std::vector<ConfigChange> out;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i].second != b[i].second) out.push_back({a[i].first, a[i].second, b[i].second});
  }
  // A table file edited in place keeps its path: the rules as read tell the change.
  auto edited_in_place = [&out](const char* key, const std::string& path_was, const std::string& was,
                                const std::string& path_is, const std::string& is) {
    if (path_was == path_is && was != is) out.push_back({key, path_was + " (table " + was + ")", path_is + " (table " + is + ")"});
  };
  edited_in_place("internode-table", from.internode_table, InterNodeTableDigest(from.internode_rules), to.internode_table,
                  InterNodeTableDigest(to.internode_rules));
  edited_in_place("selection-table", from.selection_table, SelectionTableDigest(from.selection_rules),
                  to.selection_table, SelectionTableDigest(to.selection_rules));
  // In key order, as the other changes.
  std::stable_sort(out.begin(), out.end(), [](const ConfigChange& a, const ConfigChange& b) { return a.key < b.key; });
  return out;
}

}  // namespace ohio
