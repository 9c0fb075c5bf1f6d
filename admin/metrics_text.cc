#include "admin/metrics_text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <utility>

namespace ohio {
namespace {

std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string Float(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

class Writer {
 public:
  void Family(const std::string& name, const char* type, const std::string& help) {
    out_ << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  }
  void Sample(const std::string& name, const std::string& labels, const std::string& value) {
    out_ << name;
    if (!labels.empty()) out_ << "{" << labels << "}";
    out_ << " " << value << "\n";
  }
  void Sample(const std::string& name, const std::string& labels, uint64_t value) {
    Sample(name, labels, std::to_string(value));
  }
  void Counter(const std::string& name, const std::string& help, uint64_t value) {
    Family(name, "counter", help);
    Sample(name, "", value);
  }
  void Gauge(const std::string& name, const std::string& help, uint64_t value) {
    Family(name, "gauge", help);
    Sample(name, "", value);
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

}  // namespace

std::string PrometheusText(const admin::CountersReply& c) {
  Writer w;
  w.Family("ohio_info", "gauge", "ohiod's version, node name and transport (always 1).");
  w.Sample("ohio_info",
           "version=\"" + Escape(c.version()) + "\",node=\"" + Escape(c.node_name()) + "\",transport=\"" +
               Escape(c.transport()) + "\"",
           1);
  w.Family("ohio_auth_info", "gauge", "How other nodes' daemons authenticate: mode munge or none (always 1).");
  w.Sample("ohio_auth_info", "mode=\"" + Escape(c.auth()) + "\"", 1);
  w.Family("ohio_peer_auth_refusals_total", "counter",
           "Peer calls (channel peer_call) and data connections (channel data) refused for their MUNGE "
           "credential, by reason.");
  for (const auto& a : c.auth_refusals()) {
    w.Sample("ohio_peer_auth_refusals_total",
             "channel=\"" + Escape(a.channel()) + "\",reason=\"" + Escape(a.reason()) + "\"", a.count());
  }
  w.Family("ohio_connection_refusals_total", "counter",
           "Connections the data port (port data) and the peer port (port peer) refused or closed unserved, by "
           "reason: source_cap, total_cap, auth_timeout, malformed, frame_timeout, out_of_descriptors, "
           "closed_unauthenticated.");
  for (const auto& r : c.connection_refusals()) {
    w.Sample("ohio_connection_refusals_total",
             "port=\"" + Escape(r.port()) + "\",reason=\"" + Escape(r.reason()) + "\"", r.count());
  }
  w.Gauge("ohio_unauthenticated_peer_connections",
          "Connections to the peer port on which no call has passed the credential check yet.",
          c.unauthenticated_peer_connections());
  w.Gauge("ohio_uptime_seconds", "Seconds since ohiod started.", c.uptime_seconds());
  w.Counter("ohio_collectives_served_total", "Alltoall calls completed without error.", c.collectives_served());
  w.Counter("ohio_collectives_failed_total", "Alltoall calls that returned an error to their ranks.",
            c.collectives_failed());
  w.Family("ohio_calls_handed_back_total", "counter",
           "Calls of served MPI functions that every rank handed to the MPI library, by function and reason "
           "(selection_table, rank_opted_out, ialltoall_min_bytes, not_supported).");
  for (const auto& h : c.handed_back()) {
    w.Sample("ohio_calls_handed_back_total",
             "function=\"" + Escape(h.function()) + "\",reason=\"" + Escape(h.reason()) + "\"", h.count());
  }
  const admin::ControlSocketCounters& cs = c.control_socket();
  w.Family("ohio_control_socket_refusals_total", "counter",
           "Clients of the control socket refused or disconnected, by reason (max_clients, user_max_clients: "
           "closed as they came; oversized_frame, hello_timeout, frame_timeout, pending_bytes).");
  for (const auto& [reason, count] : {std::pair<const char*, uint64_t>{"max_clients", cs.refused_control_max_clients()},
                                      {"user_max_clients", cs.refused_control_user_max_clients()},
                                      {"oversized_frame", cs.refused_control_oversized_frames()},
                                      {"hello_timeout", cs.refused_control_hello_timeouts()},
                                      {"frame_timeout", cs.refused_control_frame_timeouts()},
                                      {"pending_bytes", cs.refused_control_pending_bytes()}}) {
    w.Sample("ohio_control_socket_refusals_total", std::string("reason=\"") + reason + "\"", count);
  }
  w.Counter("ohio_control_socket_uid_deferrals_total",
            "Passes of the control thread in which a uid had used its share and its other ready clients waited.",
            cs.control_uid_deferrals());
  w.Gauge("ohio_control_pending_bytes", "Memory held in ohiod for clients' unfinished control messages.",
          cs.pending_bytes());
  w.Counter("ohio_rounds_total", "Staging rounds completed.", c.rounds());
  w.Counter("ohio_bytes_local_total", "Bytes exchanged between ranks of this node.", c.bytes_local());
  w.Counter("ohio_bytes_sent_total", "Payload bytes put to other nodes.", c.bytes_sent());
  w.Counter("ohio_bytes_received_total", "Payload bytes other nodes put into this node.", c.bytes_received());
  w.Counter("ohio_groups_failed_total", "Groups closed by an error.", c.groups_failed());
  w.Counter("ohio_groups_created_total", "Groups created: communicators that ohio served a call of.",
            c.groups_created());
  w.Counter("ohio_segments_numa_bound_total", "Groups' segments placed on the NUMA node of their ranks.",
            c.segments_numa_bound());
  w.Counter("ohio_segments_numa_refused_total",
            "Groups' segments whose chosen NUMA node the kernel refused (they work, placed anywhere).",
            c.segments_numa_refused());
  w.Counter("ohio_engine_sleeps_total", "Times the progress engine went to sleep.", c.engine_sleeps());
  w.Counter("ohio_engine_wakeups_total", "Progress engine sleeps cut short by a group's doorbell or the transport.",
            c.engine_wakeups());
  w.Counter("ohio_ranks_woken_total", "Times the daemon woke a group's sleeping ranks.", c.ranks_woken());
  w.Family("ohio_errors_total", "counter", "Errors published to groups, by kind (one per group and event).");
  for (const auto& e : c.errors()) w.Sample("ohio_errors_total", "kind=\"" + Escape(e.kind()) + "\"", e.count());
  w.Gauge("ohio_groups", "Groups open on this node.", c.groups());
  w.Gauge("ohio_segment_bytes_in_use", "Shared memory held by the groups of this node.", c.segment_bytes_in_use());
  w.Gauge("ohio_staging_bytes_in_use",
          "Memory held staging the nonblocking calls ohiod moves on one node, counted with the segments.",
          c.staging_bytes_in_use());
  w.Gauge("ohio_memory_limit_bytes", "Shared memory all groups of this node may use together.", c.memory_limit_bytes());
  w.Gauge("ohio_data_connections", "Established data connections to other nodes.", c.data_connections());
  w.Gauge("ohio_peer_channels", "Channels open to other nodes' peer services.", c.peer_channels());
  w.Gauge("ohio_puts_in_flight_peak", "The most puts one group had in flight at once (direct: at most its window).",
          c.puts_in_flight_peak());
  const admin::TransportCounters& t = c.transport_counters();
  w.Gauge("ohio_queue_pairs", "Connected RC queue pairs, every rail (verbs transport).", t.queue_pairs());
  w.Counter("ohio_registrations_total", "Group segments registered with the transport.", t.registrations());
  w.Counter("ohio_deregistrations_total", "Group segments deregistered.", t.deregistrations());
  w.Gauge("ohio_registered_bytes", "Bytes registered with the transport now.", t.registered_bytes());
  w.Gauge("ohio_registrations_pending", "Registrations queued on the registration thread.",
          t.registrations_pending());
  w.Counter("ohio_direct_puts_total", "Puts written by RDMA straight between registered segments.", t.direct_puts());
  w.Counter("ohio_bounce_puts_total", "Puts sent through bounce buffers (memory not yet registered).",
            t.bounce_puts());
  w.Counter("ohio_bounce_bytes_total", "Bytes sent through bounce buffers.", t.bounce_bytes());
  w.Counter("ohio_striped_puts_total", "Puts cut into one stripe per rail.", t.striped_puts());
  w.Counter("ohio_rtr_retries_total",
            "Queue pair moves to RTR tried again because the peer's address was not resolved yet (verbs).",
            t.rtr_retries());
  w.Gauge("ohio_datagram_peers", "Peer nodes reached over UD, outside the pool of RC queue pairs (verbs).",
          t.datagram_peers());
  w.Counter("ohio_datagram_puts_total", "Puts cut into datagrams (UD).", t.datagram_puts());
  w.Counter("ohio_datagrams_sent_total", "Numbered datagrams sent the first time (UD).", t.datagrams_sent());
  w.Counter("ohio_datagrams_received_total", "Datagrams received from peers (UD).", t.datagrams_received());
  w.Counter("ohio_datagram_retransmissions_total", "Datagrams sent again, unacknowledged after the timeout (UD).",
            t.datagram_retransmissions());
  w.Counter("ohio_datagram_duplicates_total", "Datagrams that arrived twice and were dropped (UD).",
            t.datagram_duplicates());
  w.Counter("ohio_datagrams_refused_total", "Datagrams from no peer, malformed or outside the window (UD).",
            t.datagrams_refused());
  w.Counter("ohio_rc_promotions_total", "Peer nodes moved from UD into the pool of RC queue pairs by their traffic.",
            t.rc_promotions());
  w.Counter("ohio_rc_demotions_total", "Peer nodes moved from the pool of RC queue pairs to UD by their traffic.",
            t.rc_demotions());
  w.Counter("ohio_rc_moves_refused_total", "Moves to RC the peer node refused, its pool being full.",
            t.rc_moves_refused());
  if (t.rail_put_bytes_size() > 0) {
    w.Family("ohio_rail_put_bytes_total", "counter", "Bytes of puts posted on each rail.");
    for (int i = 0; i < t.rail_put_bytes_size() && i < t.rails_size(); ++i) {
      w.Sample("ohio_rail_put_bytes_total", "rail=\"" + Escape(t.rails(i)) + "\"", t.rail_put_bytes(i));
    }
  }
  const admin::SegmentCacheCounters& cache = c.segment_cache();
  w.Counter("ohio_segment_cache_hits_total", "New groups given a cached registered segment (nothing registered).",
            cache.hits());
  w.Counter("ohio_segment_cache_misses_total", "New groups spanning nodes that found no cached segment to take.",
            cache.misses());
  w.Counter("ohio_segment_cache_evictions_total", "Cached segments deregistered and unmapped to stay under the limit.",
            cache.evictions());
  w.Counter("ohio_segment_cache_still_held_total",
            "Cached segments passed over because another process still mapped or held them.", cache.still_held());
  w.Gauge("ohio_segment_cache_bytes", "Registered segments of ended groups kept for reuse.", cache.cached_bytes());
  w.Gauge("ohio_segment_cache_segments", "Cached segments.", cache.cached_segments());
  w.Gauge("ohio_registered_memory_limit_bytes", "registered-memory-limit: open groups' segments plus cached ones.",
          cache.limit_bytes());
  w.Counter("ohio_data_frames_sent_total", "Puts written to other nodes (one frame however many pieces).",
            t.data_frames_sent());
  w.Counter("ohio_data_frames_received_total", "Puts from other nodes landed here.", t.data_frames_received());
  w.Counter("ohio_control_frames_sent_total", "Exchange messages (round announcements, credits) sent.",
            t.control_frames_sent());
  w.Counter("ohio_control_frames_received_total", "Exchange messages received.", t.control_frames_received());
  const std::string h = "ohio_collective_latency_seconds";
  w.Family(h, "histogram",
           "Latency of alltoall calls measured in ohiod, from the first rank's arrival to completion, by bytes per "
           "rank.");
  for (const auto& l : c.latency()) {
    const std::string cls = "size_class=\"" + Escape(l.size_class()) + "\"";
    for (const auto& b : l.buckets()) w.Sample(h + "_bucket", cls + ",le=\"" + Float(b.le_seconds()) + "\"", b.count());
    w.Sample(h + "_sum", cls, Float(l.sum_seconds()));
    w.Sample(h + "_count", cls, l.count());
  }
  return w.str();
}

bool WriteFileAtomically(const std::string& path, const std::string& text, std::string* error) {
  const std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = "cannot create " + tmp + ": " + std::strerror(errno);
    return false;
  }
  fchmod(fd, 0644);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t w = write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      *error = "cannot write " + tmp + ": " + std::strerror(errno);
      close(fd);
      unlink(tmp.c_str());
      return false;
    }
    done += static_cast<size_t>(w);
  }
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot rename " + tmp + " to " + path + ": " + std::strerror(errno);
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace ohio
