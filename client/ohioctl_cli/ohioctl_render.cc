#include "client/ohioctl_cli/ohioctl_render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <sstream>
#include <vector>

namespace ohio::ctl {
namespace {

using json = nlohmann::json;

// Left-aligned columns, two spaces apart.
std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

std::string Plural(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

json PlacementJson(const admin::SegmentPlacement& p) {
  json rails = json::array();
  for (const auto& r : p.rail_order()) rails.push_back(r);
  return {{"decided", p.decided()},
          {"node", p.has_node() ? json(p.node()) : json(nullptr)},
          {"bound", p.bound()},
          {"why", p.why()},
          {"bind_error", p.bind_error()},
          {"rail_order", rails}};
}

// "pending" until all local ranks joined, "none", "1" (bound) or "1 NOT BOUND".
std::string PlacementCell(const admin::SegmentPlacement& p) {
  if (!p.decided()) return "pending";
  if (!p.has_node()) return "none";
  return std::to_string(p.node()) + (p.bound() ? "" : " NOT BOUND");
}

json GroupJson(const admin::GroupSummary& g) {
  json nodes = json::array();
  for (const auto& n : g.nodes()) nodes.push_back({{"node", n.node()}, {"ranks", n.ranks()}});
  return {{"key", g.key()},
          {"size", g.size()},
          {"algorithm", g.algorithm()},
          {"internode", g.internode()},
          {"internode_digest", g.internode_digest()},
          {"selection", g.selection()},
          {"selection_digest", g.selection_digest()},
          {"state", g.state()},
          {"sequence", g.sequence()},
          {"local_ranks", g.local_ranks()},
          {"attached_ranks", g.attached_ranks()},
          {"owner_uid", g.owner_uid()},
          {"ranks_per_node", nodes},
          {"segment_bytes", g.segment_bytes()},
          {"ssb_bytes", g.ssb_bytes()},
          {"srb_bytes", g.srb_bytes()},
          {"bytes_per_rank_hint", g.bytes_per_rank_hint()},
          {"timeout_ms", g.timeout_ms()},
          {"numa", PlacementJson(g.placement())}};
}

std::string RanksPerNode(const admin::GroupSummary& g) {
  std::string s;
  for (const auto& n : g.nodes()) s += (s.empty() ? "" : " ") + n.node() + ":" + std::to_string(n.ranks());
  return s;
}

uint64_t ErrorTotal(const admin::CountersReply& c) {
  uint64_t n = 0;
  for (const auto& e : c.errors()) n += e.count();
  return n;
}

}  // namespace

std::string Bytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  size_t u = 0;
  while (v >= 1024 && u + 1 < sizeof(kUnits) / sizeof(kUnits[0])) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), v < 10 ? "%.1f %s" : "%.0f %s", v, kUnits[u]);
  return buf;
}

std::string Duration(uint64_t s) {
  const uint64_t d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
  if (d > 0) return std::to_string(d) + "d " + std::to_string(h) + "h";
  if (h > 0) return std::to_string(h) + "h " + std::to_string(m) + "m";
  if (m > 0) return std::to_string(m) + "m " + std::to_string(sec) + "s";
  return std::to_string(sec) + "s";
}

std::string Latency(double seconds) {
  if (std::isnan(seconds)) return "-";
  if (std::isinf(seconds)) return "inf";
  char buf[32];
  if (seconds < 1e-3) {
    std::snprintf(buf, sizeof(buf), "%.0f µs", seconds * 1e6);
  } else if (seconds < 1) {
    std::snprintf(buf, sizeof(buf), "%.3g ms", seconds * 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.3g s", seconds);
  }
  return buf;
}

double QuantileBound(const admin::LatencyHistogram& h, double q) {
  if (h.count() == 0) return std::numeric_limits<double>::quiet_NaN();
  const double want = q * static_cast<double>(h.count());
  for (const auto& b : h.buckets()) {
    if (static_cast<double>(b.count()) >= want) return b.le_seconds();
  }
  return std::numeric_limits<double>::infinity();
}

json TransportCountersJson(const admin::TransportCounters& t) {
  return {{"registrations", t.registrations()},
          {"deregistrations", t.deregistrations()},
          {"registered_bytes", t.registered_bytes()},
          {"registrations_pending", t.registrations_pending()},
          {"direct_puts", t.direct_puts()},
          {"bounce_puts", t.bounce_puts()},
          {"bounce_bytes", t.bounce_bytes()},
          {"queue_pairs", t.queue_pairs()},
          {"data_frames_sent", t.data_frames_sent()},
          {"data_frames_received", t.data_frames_received()},
          {"control_frames_sent", t.control_frames_sent()},
          {"control_frames_received", t.control_frames_received()},
          {"rails", std::vector<std::string>(t.rails().begin(), t.rails().end())},
          {"rail_put_bytes", std::vector<uint64_t>(t.rail_put_bytes().begin(), t.rail_put_bytes().end())},
          {"striped_puts", t.striped_puts()},
          {"rtr_retries", t.rtr_retries()},
          {"rc_pool", t.rc_pool()},
          {"datagram_peers", t.datagram_peers()},
          {"datagram_puts", t.datagram_puts()},
          {"datagrams_sent", t.datagrams_sent()},
          {"datagrams_received", t.datagrams_received()},
          {"datagram_acks_sent", t.datagram_acks_sent()},
          {"datagram_retransmissions", t.datagram_retransmissions()},
          {"datagram_duplicates", t.datagram_duplicates()},
          {"datagrams_refused", t.datagrams_refused()},
          {"datagrams_dropped", t.datagrams_dropped()},
          {"rc_promotions", t.rc_promotions()},
          {"rc_demotions", t.rc_demotions()},
          {"rc_moves_refused", t.rc_moves_refused()}};
}

json SegmentCacheJson(const admin::SegmentCacheCounters& c) {
  return {{"hits", c.hits()},
          {"misses", c.misses()},
          {"evictions", c.evictions()},
          {"still_held", c.still_held()},
          {"cached_bytes", c.cached_bytes()},
          {"cached_segments", c.cached_segments()},
          {"in_use_bytes", c.in_use_bytes()},
          {"limit_bytes", c.limit_bytes()}};
}

// The registered segments kept for the next group of the same uid and sizes.
std::string SegmentCacheLine(const admin::SegmentCacheCounters& c) {
  return Plural(c.cached_segments(), "segment", "segments") + " (" + Bytes(c.cached_bytes()) + ") cached; " +
         std::to_string(c.hits()) + " reused, " + std::to_string(c.misses()) + " missed, " +
         std::to_string(c.evictions()) + " evicted, " + std::to_string(c.still_held()) +
         " passed over while another process held them; registered " + Bytes(c.in_use_bytes()) + " in use + " +
         Bytes(c.cached_bytes()) + " cached of " + Bytes(c.limit_bytes());
}

// The UD service's part: the pool's bound, the peers beyond it, and their datagrams.
std::string DatagramsLine(const admin::TransportCounters& t) {
  if (t.rc_pool() == UINT32_MAX) return "; RC pool unlimited (no UD)";
  return "; RC pool " + std::to_string(t.rc_pool()) + " per rail, " + Plural(t.datagram_peers(), "peer", "peers") +
         " over UD: " + std::to_string(t.datagram_puts()) + " puts in " + std::to_string(t.datagrams_sent()) +
         " datagrams, " + std::to_string(t.datagram_retransmissions()) + " sent again, " +
         std::to_string(t.datagram_duplicates()) + " duplicates, " + std::to_string(t.datagrams_refused()) +
         " refused; " + std::to_string(t.rc_promotions()) + " promoted to RC, " + std::to_string(t.rc_demotions()) +
         " demoted to UD, " + std::to_string(t.rc_moves_refused()) + " refused by the peer";
}

// One line on what the transport did with memory and queue pairs ("" for tcp, which has none).
std::string TransportCountersLine(const admin::TransportCounters& t) {
  if (t.rails_size() == 0) return "";
  std::string rails;
  for (int i = 0; i < t.rails_size(); ++i) {
    rails += (rails.empty() ? "" : ", ") + t.rails(i);
    if (i < t.rail_put_bytes_size()) rails += " (" + Bytes(t.rail_put_bytes(i)) + " put)";
  }
  return std::to_string(t.queue_pairs()) + " queue pairs on " + rails + "; " + std::to_string(t.registrations()) +
         " registered (" + Bytes(t.registered_bytes()) + " now, " + std::to_string(t.registrations_pending()) +
         " pending); puts " + std::to_string(t.direct_puts()) + " direct (" + std::to_string(t.striped_puts()) +
         " striped over the rails), " + std::to_string(t.bounce_puts()) + " through bounce buffers (" +
         Bytes(t.bounce_bytes()) + "); queue pairs moved to RTR again " + std::to_string(t.rtr_retries()) +
         " times (peer address not yet resolved)" + DatagramsLine(t);
}

// Frames on the wire, either transport: puts (data) and exchange messages (control).
std::string FramesLine(const admin::TransportCounters& t) {
  return "data " + std::to_string(t.data_frames_sent()) + " sent, " + std::to_string(t.data_frames_received()) +
         " received; control " + std::to_string(t.control_frames_sent()) + " sent, " +
         std::to_string(t.control_frames_received()) + " received";
}

json StatusJson(const admin::StatusReply& s) {
  json hcas = json::array();
  for (const auto& h : s.hcas()) {
    json ports = json::array();
    for (const auto& p : h.ports()) {
      ports.push_back(
          {{"port", p.port()}, {"state", p.state()}, {"link_layer", p.link_layer()}, {"active_mtu", p.active_mtu()}});
    }
    hcas.push_back({{"name", h.name()},
                    {"node_guid", h.node_guid()},
                    {"numa_nodes", std::vector<uint32_t>(h.numa_nodes().begin(), h.numa_nodes().end())},
                    {"local_cpus", h.local_cpus()},
                    {"ports", ports}});
  }
  json config = json::object(), pending = json::object(), reloadable = json::array();
  for (const auto& e : s.config()) {
    config[e.key()] = e.value();
    if (!e.pending().empty()) pending[e.key()] = e.pending();
    if (e.reloadable()) reloadable.push_back(e.key());
  }
  json groups = json::array();
  for (const auto& g : s.group()) groups.push_back(GroupJson(g));
  return {{"version", s.version()},
          {"node", s.node_name()},
          {"pid", s.pid()},
          {"uptime_seconds", s.uptime_seconds()},
          {"topology", s.topology()},
          {"auth", s.auth()},
          {"transport", s.transport()},
          {"transport_choice", s.transport_choice()},
          {"selection_table", s.selection_table()},
          {"selection_table_digest", s.selection_table_digest()},
          {"selection_table_simulated_rows", s.selection_table_simulated_rows()},
          {"internode_table", s.internode_table()},
          {"internode_table_digest", s.internode_table_digest()},
          {"internode_table_simulated_rows", s.internode_table_simulated_rows()},
          {"transport_counters", TransportCountersJson(s.transport_counters())},
          {"segment_cache", SegmentCacheJson(s.segment_cache())},
          {"data_address", s.data_address()},
          {"hcas", hcas},
          {"hca_note", s.hca_note()},
          {"control_socket", s.control_socket()},
          {"admin_socket", s.admin_socket()},
          {"groups", s.groups()},
          {"group", groups},
          {"segment_bytes_in_use", s.segment_bytes_in_use()},
          {"staging_bytes_in_use", s.staging_bytes_in_use()},
          {"memory_limit_bytes", s.memory_limit_bytes()},
          {"data_connections", s.data_connections()},
          {"connected_peers", std::vector<std::string>(s.connected_peers().begin(), s.connected_peers().end())},
          {"collectives_served", s.collectives_served()},
          {"collectives_failed", s.collectives_failed()},
          {"config_file", s.config_file()},
          {"config", config},
          {"pending_restart", pending},
          {"reloadable", reloadable},
          {"last_reload", s.last_reload()}};
}

std::string StatusText(const admin::StatusReply& s) {
  std::ostringstream o;
  o << "ohiod " << s.version() << " on node " << s.node_name() << ", up " << Duration(s.uptime_seconds()) << " (pid "
    << s.pid() << ")\n";
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"auth", s.auth() == "none" ? "none (any host that reaches the peer and data ports is trusted)"
                                             : s.auth()});
  rows.push_back({"transport", s.transport() + ", data address " + s.data_address() +
                                   (s.transport_choice().empty() ? "" : " (" + s.transport_choice() + ")")});
  if (const std::string t = TransportCountersLine(s.transport_counters()); !t.empty()) rows.push_back({"", t});
  if (s.hcas_size() == 0) {
    rows.push_back({"HCAs", "none" + (s.hca_note().empty() ? "" : ": " + s.hca_note())});
  }
  for (const auto& h : s.hcas()) {
    std::string numa;
    for (uint32_t n : h.numa_nodes()) numa += (numa.empty() ? "" : ",") + std::to_string(n);
    std::string ports;
    for (const auto& p : h.ports()) {
      ports += (ports.empty() ? "" : ", ") + std::string("port ") + std::to_string(p.port()) + " " + p.state() + " " +
               p.link_layer() + (p.active_mtu() ? " mtu " + std::to_string(p.active_mtu()) : "");
    }
    rows.push_back({"HCA " + h.name(), "NUMA node " + (numa.empty() ? std::string("unknown") : numa) +
                                           (h.local_cpus().empty() ? "" : ", cpus " + h.local_cpus()) +
                                           (ports.empty() ? "" : "; " + ports)});
  }
  if (s.hcas_size() > 0 && !s.hca_note().empty()) rows.push_back({"", s.hca_note()});
  // Rows ohio-sim proposed decide as measured ones do: say how many there are.
  auto simulated = [](uint32_t rows) {
    return rows == 0 ? std::string() : "; " + std::to_string(rows) + (rows == 1 ? " row" : " rows") + " simulated";
  };
  rows.push_back({"selection", s.selection_table() + " (digest " + s.selection_table_digest() + "), for new groups" +
                                   simulated(s.selection_table_simulated_rows())});
  rows.push_back({"inter-node", s.internode_table() + " (digest " + s.internode_table_digest() + "), for new groups" +
                                    simulated(s.internode_table_simulated_rows())});
  rows.push_back({"topology", s.topology()});
  rows.push_back({"sockets", "control " + s.control_socket() + ", admin " + s.admin_socket()});
  rows.push_back({"groups", Plural(s.groups(), "open", "open") + ", " + Bytes(s.segment_bytes_in_use()) + " of " +
                                Bytes(s.memory_limit_bytes()) + " shared memory in use, " +
                                Bytes(s.staging_bytes_in_use()) + " staging nonblocking calls"});
  rows.push_back({"cache", SegmentCacheLine(s.segment_cache())});
  std::string peers;
  for (const auto& p : s.connected_peers()) peers += (peers.empty() ? "" : ", ") + p;
  rows.push_back({"peers", Plural(s.data_connections(), "data connection", "data connections") +
                               (peers.empty() ? "" : " (" + peers + ")")});
  rows.push_back({"collectives", std::to_string(s.collectives_served()) + " served, " +
                                     std::to_string(s.collectives_failed()) + " failed"});
  rows.push_back(
      {"config", s.config_file().empty() ? "no config file (defaults, environment, flags)" : s.config_file()});
  if (!s.last_reload().empty()) rows.push_back({"last reload", s.last_reload()});
  o << Table(rows);
  o << "settings in force (* = SIGHUP reloads it):\n";
  std::vector<std::vector<std::string>> config;
  for (const auto& e : s.config()) {
    std::string value = e.value().empty() ? "\"\"" : e.value();
    if (!e.pending().empty()) value += "   (config now says " + e.pending() + ": needs a restart)";
    config.push_back({std::string("  ") + (e.reloadable() ? "*" : " ") + " " + e.key(), "= " + value});
  }
  o << Table(config);
  return o.str();
}

json PeersJson(const admin::ListPeersReply& p) {
  json peers = json::array();
  for (const auto& x : p.peers()) {
    peers.push_back({{"node", x.node()},
                     {"peer_address", x.peer_address()},
                     {"state", x.state()},
                     {"data_connections", x.data_connections()},
                     {"configured", x.configured()},
                     {"groups", x.groups()},
                     {"link", x.link()}});
  }
  return {{"peers", peers}};
}

std::string PeersText(const admin::ListPeersReply& p) {
  if (p.peers_size() == 0) return "no peers: no --peer configured, no group spans other nodes, no data connection\n";
  std::vector<std::vector<std::string>> rows = {
      {"NODE", "PEER SERVICE", "STATE", "DATA CONNECTIONS", "LINK", "GROUPS", "FROM"}};
  for (const auto& x : p.peers()) {
    rows.push_back({x.node(), x.peer_address(), x.state(), std::to_string(x.data_connections()),
                    x.link().empty() ? "-" : x.link(), std::to_string(x.groups()),
                    x.configured() ? "--peer" : "group/DNS"});
  }
  return Table(rows);
}

json GroupsJson(const admin::ListGroupsReply& g) {
  json groups = json::array();
  for (const auto& x : g.groups()) groups.push_back(GroupJson(x));
  return {{"groups", groups}};
}

std::string GroupsText(const admin::ListGroupsReply& g) {
  if (g.groups_size() == 0) return "no groups\n";
  std::vector<std::vector<std::string>> rows = {
      {"KEY", "STATE", "ALGO", "SEQ", "RANKS", "HERE", "RANKS PER NODE", "UID", "MEMORY", "SIZED FOR", "TIMEOUT",
       "NUMA"}};
  std::string placements, tables;
  for (const auto& x : g.groups()) {
    tables += x.key() + ": selection table " + x.selection() + " (digest " + x.selection_digest() +
              "), inter-node table " + x.internode() + " (digest " + x.internode_digest() + ")\n";
    const admin::SegmentPlacement& p = x.placement();
    if (p.decided()) {
      std::string rails;
      for (const auto& r : p.rail_order()) rails += (rails.empty() ? "" : ", ") + r;
      placements += x.key() + ": NUMA " + PlacementCell(p) + " (" + p.why() + ")" +
                    (p.bind_error().empty() ? "" : ": " + p.bind_error()) +
                    "; rails " + (rails.empty() ? "none" : rails) + "\n";
    }
    rows.push_back({x.key(), x.state(), x.algorithm(), std::to_string(x.sequence()), std::to_string(x.size()),
                    std::to_string(x.attached_ranks()) + "/" + std::to_string(x.local_ranks()), RanksPerNode(x),
                    std::to_string(x.owner_uid()), Bytes(x.segment_bytes()),
                    x.bytes_per_rank_hint() == 0 ? "configured" : "<= " + Bytes(x.bytes_per_rank_hint()) + "/rank",
                    std::to_string(x.timeout_ms()) + " ms", PlacementCell(x.placement())});
  }
  return Table(rows) + tables + placements +
         "SEQ: rounds completed; HERE: ranks attached on this node / its ranks of the group;\n"
         "SIZED FOR: calls one round of the group's buffers holds (configured: ohiod's ssb/srb-bytes);\n"
         "NUMA: the node the segment's memory is placed on, once all local ranks joined (rails: nearest first)\n";
}

json CountersJson(const admin::CountersReply& c) {
  json errors = json::object();
  for (const auto& e : c.errors()) errors[e.kind()] = e.count();
  json latency = json::array();
  for (const auto& l : c.latency()) {
    json buckets = json::array();
    for (const auto& b : l.buckets()) {
      // JSON has no infinity: the last bucket's bound is null.
      buckets.push_back(
          {{"le_seconds", std::isinf(b.le_seconds()) ? json(nullptr) : json(b.le_seconds())}, {"count", b.count()}});
    }
    latency.push_back({{"size_class", l.size_class()},
                       {"min_bytes", l.min_bytes()},
                       {"max_bytes", l.max_bytes()},
                       {"count", l.count()},
                       {"sum_seconds", l.sum_seconds()},
                       {"buckets", buckets}});
  }
  json refusals = json::object();
  for (const auto& a : c.auth_refusals()) refusals[a.channel()][a.reason()] = a.count();
  json handed_back = json::object();
  for (const auto& h : c.handed_back()) handed_back[h.function()][h.reason()] = h.count();
  json connection_refusals = json::object();
  for (const auto& r : c.connection_refusals()) connection_refusals[r.port()][r.reason()] = r.count();
  const admin::ControlSocketCounters& cs = c.control_socket();
  const json control_socket = {{"refused_max_clients", cs.refused_control_max_clients()},
                               {"refused_user_max_clients", cs.refused_control_user_max_clients()},
                               {"refused_oversized_frames", cs.refused_control_oversized_frames()},
                               {"refused_hello_timeouts", cs.refused_control_hello_timeouts()},
                               {"refused_frame_timeouts", cs.refused_control_frame_timeouts()},
                               {"refused_pending_bytes", cs.refused_control_pending_bytes()},
                               {"uid_deferrals", cs.control_uid_deferrals()},
                               {"pending_bytes", cs.pending_bytes()}};
  return {{"node", c.node_name()},
          {"version", c.version()},
          {"transport", c.transport()},
          {"uptime_seconds", c.uptime_seconds()},
          {"unix_time_ms", c.unix_time_ms()},
          {"collectives_served", c.collectives_served()},
          {"collectives_failed", c.collectives_failed()},
          {"rounds", c.rounds()},
          {"bytes_local", c.bytes_local()},
          {"bytes_sent", c.bytes_sent()},
          {"bytes_received", c.bytes_received()},
          {"groups_failed", c.groups_failed()},
          {"groups_created", c.groups_created()},
          {"segments_numa_bound", c.segments_numa_bound()},
          {"segments_numa_refused", c.segments_numa_refused()},
          {"engine_sleeps", c.engine_sleeps()},
          {"engine_wakeups", c.engine_wakeups()},
          {"ranks_woken", c.ranks_woken()},
          {"errors", errors},
          {"latency", latency},
          {"groups", c.groups()},
          {"segment_bytes_in_use", c.segment_bytes_in_use()},
          {"staging_bytes_in_use", c.staging_bytes_in_use()},
          {"memory_limit_bytes", c.memory_limit_bytes()},
          {"data_connections", c.data_connections()},
          {"peer_channels", c.peer_channels()},
          {"transport_counters", TransportCountersJson(c.transport_counters())},
          {"segment_cache", SegmentCacheJson(c.segment_cache())},
          {"auth", c.auth()},
          {"auth_refusals", refusals},
          {"connection_refusals", connection_refusals},
          {"unauthenticated_peer_connections", c.unauthenticated_peer_connections()},
          {"control_socket", control_socket},
          {"handed_back", handed_back}};
}

std::string CountersText(const admin::CountersReply& c) {
  std::ostringstream o;
  o << "node " << c.node_name() << " (ohiod " << c.version() << ", " << c.transport() << "), up "
    << Duration(c.uptime_seconds()) << "\n";
  std::string errors;
  for (const auto& e : c.errors()) errors += (errors.empty() ? "" : ", ") + e.kind() + " " + std::to_string(e.count());
  std::string handed_back;
  for (const auto& h : c.handed_back()) {
    if (h.count() == 0) continue;
    handed_back += (handed_back.empty() ? "" : ", ") + h.function() + " " + h.reason() + " " + std::to_string(h.count());
  }
  std::string refused;
  for (const auto& a : c.auth_refusals()) {
    if (a.count() == 0) continue;
    refused += (refused.empty() ? "" : ", ") + a.channel() + " " + a.reason() + " " + std::to_string(a.count());
  }
  std::string ports;
  for (const auto& r : c.connection_refusals()) {
    if (r.count() == 0) continue;
    ports += (ports.empty() ? "" : ", ") + r.port() + " " + r.reason() + " " + std::to_string(r.count());
  }
  const admin::ControlSocketCounters& cs = c.control_socket();
  std::string control;
  for (const auto& [what, n] : std::vector<std::pair<const char*, uint64_t>>{
           {"max-clients", cs.refused_control_max_clients()},
           {"user-max-clients", cs.refused_control_user_max_clients()},
           {"oversized frame", cs.refused_control_oversized_frames()},
           {"no hello", cs.refused_control_hello_timeouts()},
           {"frame timeout", cs.refused_control_frame_timeouts()},
           {"pending bytes", cs.refused_control_pending_bytes()}}) {
    if (n != 0) control += (control.empty() ? "" : ", ") + std::string(what) + " " + std::to_string(n);
  }
  o << Table(
      {{"collectives", std::to_string(c.collectives_served()) + " served, " + std::to_string(c.collectives_failed()) +
                           " failed, " + std::to_string(c.rounds()) + " rounds"},
       {"handed back", handed_back.empty() ? "none" : handed_back},
       {"bytes", "local " + Bytes(c.bytes_local()) + ", sent " + Bytes(c.bytes_sent()) + ", received " +
                     Bytes(c.bytes_received())},
       {"groups", std::to_string(c.groups()) + " open; " + std::to_string(c.groups_created()) + " created, " +
                      std::to_string(c.groups_failed()) + " failed since start; " +
                      Bytes(c.segment_bytes_in_use()) + " of " + Bytes(c.memory_limit_bytes()) +
                      " shared memory in use, " + Bytes(c.staging_bytes_in_use()) + " staging nonblocking calls"},
       {"connections", std::to_string(c.data_connections()) + " to other nodes; " +
                           Plural(c.peer_channels(), "peer service channel", "peer service channels") + " open"},
       {"engine", std::to_string(c.engine_sleeps()) + " sleeps, " + std::to_string(c.engine_wakeups()) +
                      " cut short by a doorbell or the transport; ranks woken " +
                      std::to_string(c.ranks_woken()) + " times"},
       {"frames", FramesLine(c.transport_counters())},
       {"transport", TransportCountersLine(c.transport_counters())},
       {"cache", SegmentCacheLine(c.segment_cache())},
       {"errors", errors},
       {"auth", c.auth() + ", refused: " + (refused.empty() ? "none" : refused)},
       {"ports", "refused: " + (ports.empty() ? "none" : ports) + "; " +
                     std::to_string(c.unauthenticated_peer_connections()) + " peer connection(s) not yet authenticated"},
       {"control", "refused: " + (control.empty() ? "none" : control) + "; " +
                       std::to_string(cs.control_uid_deferrals()) + " uid deferral(s); " + Bytes(cs.pending_bytes()) +
                       " held for unfinished messages"}});
  std::vector<std::vector<std::string>> rows = {{"  BYTES PER RANK", "COUNT", "MEAN", "P50", "P99"}};
  for (const auto& l : c.latency()) {
    if (l.count() == 0) continue;
    rows.push_back({"  " + l.size_class(), std::to_string(l.count()),
                    Latency(l.sum_seconds() / static_cast<double>(l.count())), "<= " + Latency(QuantileBound(l, 0.5)),
                    "<= " + Latency(QuantileBound(l, 0.99))});
  }
  o << "latency, first rank in to completion";
  if (rows.size() == 1) {
    o << ": no collective yet\n";
  } else {
    o << " (percentiles are bucket bounds):\n" << Table(rows);
  }
  return o.str();
}

std::string WatchHeader() {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%-8s  %12s  %12s  %12s  %12s  %8s  %6s  %5s\n", "TIME", "COLLECTIVES/s", "LOCAL/s",
                "SENT/s", "RECEIVED/s", "ERRORS", "GROUPS", "CONNS");
  return buf;
}

std::string WatchLine(const admin::CountersReply* previous, const admin::CountersReply& now) {
  char time[16];
  const std::time_t t = static_cast<std::time_t>(now.unix_time_ms() / 1000);
  struct tm tm;
  localtime_r(&t, &tm);
  std::strftime(time, sizeof(time), "%H:%M:%S", &tm);
  char buf[200];
  if (previous == nullptr) {
    std::snprintf(buf, sizeof(buf), "%-8s  %12s  %12s  %12s  %12s  %8llu  %6u  %5u   (totals: %llu collectives)\n",
                  time, "-", "-", "-", "-", static_cast<unsigned long long>(ErrorTotal(now)), now.groups(),
                  now.data_connections(), static_cast<unsigned long long>(now.collectives_served()));
    return buf;
  }
  const double dt = std::max(1e-3, static_cast<double>(now.unix_time_ms() - previous->unix_time_ms()) / 1e3);
  auto rate = [dt](uint64_t a, uint64_t b) { return b >= a ? static_cast<double>(b - a) / dt : 0.0; };
  auto bytes_rate = [&](uint64_t a, uint64_t b) { return Bytes(static_cast<uint64_t>(rate(a, b))) + "/s"; };
  std::snprintf(buf, sizeof(buf), "%-8s  %12.1f  %12s  %12s  %12s  %8llu  %6u  %5u\n", time,
                rate(previous->collectives_served(), now.collectives_served()),
                bytes_rate(previous->bytes_local(), now.bytes_local()).c_str(),
                bytes_rate(previous->bytes_sent(), now.bytes_sent()).c_str(),
                bytes_rate(previous->bytes_received(), now.bytes_received()).c_str(),
                static_cast<unsigned long long>(ErrorTotal(now) - std::min(ErrorTotal(now), ErrorTotal(*previous))),
                now.groups(), now.data_connections());
  return buf;
}

json HealthJson(const admin::HealthReply& h) {
  return {{"healthy", h.healthy()},
          {"problems", std::vector<std::string>(h.problems().begin(), h.problems().end())},
          {"warnings", std::vector<std::string>(h.warnings().begin(), h.warnings().end())},
          {"checks", std::vector<std::string>(h.checks().begin(), h.checks().end())}};
}

std::string HealthText(const admin::HealthReply& h) {
  std::string o = h.healthy() ? "healthy\n" : "UNHEALTHY\n";
  for (const auto& p : h.problems()) o += "  problem: " + p + "\n";
  for (const auto& w : h.warnings()) o += "  warning: " + w + "\n";
  for (const auto& c : h.checks()) o += "  ok: " + c + "\n";
  return o;
}

}  // namespace ohio::ctl
