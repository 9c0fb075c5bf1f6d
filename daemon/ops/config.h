// ohiod's settings. Sources, later winning: the config file (key = value, the keys are the
// long flag names), OHIOD_<KEY> environment variables, command-line flags.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "daemon/transport/verbs/rc/transition_retry.h"
#include "shm/plan/buffer_sizing.h"
#include "shm/tables/internode_choice.h"
#include "shm/tables/selection_table.h"

namespace ohio {

// What the control server reads from a client at once: a message of max_message_bytes and the
// rest of one read may be buffered for a client, which the pending bounds must allow.
constexpr uint64_t kControlReadBytes = 64u << 10;

struct DaemonConfig {
  std::string config_file;  // the file actually read, "" if none
  std::string node_name;    // default: the host name
  std::string socket = "/run/ohio/ohiod.sock";
  std::string log_level = "info";
  uint64_t ssb_bytes = kDefaultSsbBytes;
  uint64_t srb_bytes = kDefaultSrbBytes;
  // The shortest slice of a message a staged round of a group spanning nodes copies
  // (shm/plan/exchange_plan.h, PlanGroupStaging); a group plans with the smallest of its nodes'.
  uint64_t min_slice_bytes = 4u << 10;
  uint64_t memory_limit = 1ull << 30;
  // Registered memory (segments of open groups spanning nodes plus those cached for the next
  // group of the same uid and layout); cached ones are evicted to stay under it. 0: no cache.
  uint64_t registered_memory_limit = 256ull << 20;
  uint32_t timeout_ms = 60000;
  uint32_t spin_us = 50;
  uint32_t round_spin_us = 1000;
  // The CPUs this node's daemon and ranks may count as their own: "auto" (what the host offers,
  // common/host_cpus.h) or a number, fractional when several emulated nodes share a host.
  // Whether anything on the node spins is decided from it (common/spin_mode.h).
  std::string cpus = "auto";
  std::string design = "v3";  // the node-level design (v1, v2, v3) a group gets when its ranks ask for none
  // How the daemons of a group choose their inter-node algorithm per call (shm/tables/internode_choice.h):
  // "auto" by the table (internode_table's file, else the built-in one), or one forced for every
  // call. Every node of a group must choose alike: a node that does not refuses the group.
  std::string internode_table;  // a table file (shm/tables/internode_table_text.h); "" the built-in table
  std::string internode = "auto";
  // internode_table's file as read when the settings were loaded (the built-in table if none).
  InterNodeTable internode_rules = DefaultInterNodeTable();
  // The most puts the direct inter-node algorithm keeps in flight from this node at once, whatever
  // table or forced algorithm a group runs by. Sender-side only: the nodes of a group need not agree.
  uint32_t direct_window = InterNodeTable().direct_window;
  // Which calls ohio serves and which it hands to the MPI library (shm/tables/selection_table.h),
  // handed to every rank at join. Every node of a group must hold the same rows: a node that
  // does not refuses the group. SIGHUP reads the file again, for the groups created afterwards.
  std::string selection_table;  // a table file (shm/tables/selection_table_text.h); "" the built-in table
  // selection_table's file as read when the settings were loaded (the built-in table if none).
  SelectionTable selection_rules = DefaultSelectionTable();
  uint64_t max_message_bytes = 4u << 20;
  uint32_t max_group_ranks = 1u << 20;
  uint32_t max_clients = 4096;
  // What one uid may take of this node, so that one user cannot starve another.
  uint32_t user_memory_percent = 50;  // of memory_limit, over all of the uid's groups
  uint32_t user_max_groups = 64;
  uint32_t user_max_clients = 1024;
  // Memory held for control messages still arriving (a frame announced, not all of it come):
  // of one uid's connections together, and of every client's. A client whose bytes would pass
  // either is disconnected.
  uint64_t user_max_pending_bytes = 64ull << 20;
  uint64_t max_pending_bytes = 256ull << 20;
  // How long a new connection, to the control socket or the data port, has to say hello (on
  // the data port: with its credential), and one to the peer port to make a call whose
  // credential passes, before it is closed.
  uint32_t hello_timeout_ms = 5000;
  // How long a client of the control socket may take over one message, from its first byte to
  // its last, before it is told why and disconnected (its unfinished message's memory freed).
  uint32_t control_frame_timeout_ms = 3000;
  // Connections to the data port that have not said hello yet, at most; one address may hold
  // half of them. Others are closed as they come.
  uint32_t max_unauthenticated_data_connections = 128;
  // The same for connections to the peer port on which no call has passed the credential check.
  uint32_t max_unauthenticated_peer_connections = 128;
  // A data connection that begins a frame and has not finished it this long after is closed.
  uint32_t data_frame_timeout_ms = 5000;
  // A connection to the peer port with no call under way this long is closed by gRPC
  // (GRPC_ARG_MAX_CONNECTION_IDLE_MS); the peer opens another when it next calls.
  uint32_t peer_connection_idle_ms = 120000;
  // Threads the peer service may run calls on at once (gRPC's resource quota); calls beyond are
  // answered RESOURCE_EXHAUSTED and the peer retries.
  uint32_t peer_service_threads = 64;
  // Other nodes.
  std::vector<std::string> peers;  // "name=host:port" of other nodes' peer services
  // Other nodes found by DNS on peer_port: the names this admits (daemon/ops/host_pattern.h), at
  // addresses inside peer_networks when set (daemon/ops/address_ranges.h). Nodes neither listed
  // in peers nor admitted here are not this cluster's: a group naming one is refused.
  std::string peer_hosts;
  std::string peer_networks;
  // Peer calls made at once (each to another node; at most one per node at a time).
  uint32_t peer_calls_at_once = 4;
  // A node's peer channel not used this long is closed (opened again when a group needs it).
  uint32_t peer_channel_idle_s = 60;
  std::string listen = "0.0.0.0";  // IPv4 address the peer service and the data port bind to
  uint16_t peer_port = 7470;
  uint16_t data_port = 7471;
  std::string advertise;  // host other nodes reach this one's data port at (default: node name)
  // How peers prove they are this cluster's daemons: "munge" (a MUNGE credential on every peer
  // call and data connection) or "none" (anyone who reaches the ports is trusted).
  std::string auth = "munge";
  std::string munge_socket = "/run/munge/munge.socket.2";
  // Data transport: "verbs" (RDMA), "tcp", or "auto" (verbs when an active RDMA port exists).
  std::string transport = "auto";
  std::vector<std::string> hcas;  // verbs rails: "dev" or "dev:port"; empty = every active port
  uint32_t gid_index = 0;
  uint32_t registration_delay_ms = 0;  // holds registrations back (testing the bounce path)
  // RC queue pairs per rail, at most ("unlimited": one per peer node); the peers beyond them are
  // reached over UD. A number or "unlimited".
  std::string rc_pool = "256";
  uint32_t rc_pool_interval_ms = 1000;  // how often the pool is planned by traffic (0: never)
  uint32_t drop_one_datagram_in = 0;  // loss made on arrival over UD (testing the reliability)
  // How long one dial's queue pairs may try RTR again while the peer's address is not resolved
  // (daemon/transport/verbs/rc/transition_retry.h): 0 (one attempt) to the longest, the default.
  uint32_t rtr_retry_budget_ms = static_cast<uint32_t>(kLongestRtrRetryBudget.count());
  // Plan NUMA placement for the machine this hwloc XML file describes instead of this one
  // (testing and debugging: binding still happens here, and says so when the kernel refuses).
  std::string topology_xml;
  std::string admin_socket = "/run/ohio/admin.sock";
  // Prometheus metrics in node_exporter's textfile format, rewritten every interval.
  std::string metrics_file;  // "" writes none
  uint32_t metrics_interval_s = 15;
};

struct ConfigOutcome {
  DaemonConfig config;
  bool exit_now = false;  // --help or --version was answered
  int exit_code = 0;
  std::string output;     // what to print (help text, version, or the error)
};

// Never exits the process: the caller prints `output` and exits when asked.
ConfigOutcome LoadDaemonConfig(int argc, const char* const* argv);

constexpr char kDefaultConfigFile[] = "/etc/ohio/ohiod.conf";

// Every setting as (key, value), keys being the long flag names, in key order.
std::vector<std::pair<std::string, std::string>> ConfigEntries(const DaemonConfig& config);

// Whether SIGHUP applies a new value of `key` to a running daemon; every other key needs a
// restart (sockets, ports, the node's name, memory sizes, the peers table...).
bool IsReloadable(const std::string& key);

struct ConfigChange {
  std::string key;
  std::string from;
  std::string to;
};
// The keys whose values differ, in key order.
std::vector<ConfigChange> DiffConfig(const DaemonConfig& from, const DaemonConfig& to);
// Copies every reloadable setting of `next` into `running`, and nothing else.
void ApplyReloadable(const DaemonConfig& next, DaemonConfig* running);

}  // namespace ohio
