// The Prometheus text of a Counters reply: strict format, every counter present with its value,
// label values escaped; and the strict reader used on it refuses what Prometheus would.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "admin/metrics_text.h"
#include "tests/unit/prometheus_text.h"

namespace ohio {
namespace {

using testing::ParsePrometheusText;

admin::CountersReply Sample() {
  admin::CountersReply c;
  c.set_node_name("node \"7\"\\a");
  c.set_version("0.1.0");
  c.set_transport("tcp");
  c.set_uptime_seconds(42);
  c.set_collectives_served(10);
  c.set_collectives_failed(2);
  c.set_rounds(12);
  c.set_bytes_local(4096);
  c.set_bytes_sent(1u << 20);
  c.set_bytes_received(3u << 20);
  c.set_groups_failed(1);
  c.set_segments_numa_bound(3);
  c.set_segments_numa_refused(2);
  for (const char* kind : {"size_mismatch", "timeout", "group_failed", "refused", "other"}) {
    auto* e = c.add_errors();
    e->set_kind(kind);
    e->set_count(std::string(kind) == "timeout" ? 3 : 0);
  }
  auto* l = c.add_latency();
  l->set_size_class("0-1KiB");
  l->set_max_bytes(1024);
  for (auto [le, n] : std::vector<std::pair<double, uint64_t>>{
           {1e-5, 1}, {2.5e-5, 4}, {1.0, 9}, {std::numeric_limits<double>::infinity(), 10}}) {
    auto* b = l->add_buckets();
    b->set_le_seconds(le);
    b->set_count(n);
  }
  l->set_count(10);
  l->set_sum_seconds(1.25);
  c.set_groups(3);
  c.set_segment_bytes_in_use(1 << 20);
  c.set_memory_limit_bytes(1 << 30);
  c.set_data_connections(2);
  c.mutable_transport_counters()->set_queue_pairs(6);
  c.mutable_transport_counters()->set_bounce_puts(3);
  c.mutable_transport_counters()->set_direct_puts(40);
  c.mutable_transport_counters()->set_data_frames_sent(41);
  c.mutable_transport_counters()->set_data_frames_received(42);
  c.mutable_transport_counters()->set_control_frames_sent(43);
  c.mutable_transport_counters()->set_control_frames_received(44);
  admin::SegmentCacheCounters* cache = c.mutable_segment_cache();
  cache->set_hits(7);
  cache->set_misses(2);
  cache->set_evictions(1);
  cache->set_still_held(4);
  cache->set_cached_bytes(3 << 20);
  cache->set_cached_segments(2);
  cache->set_limit_bytes(256 << 20);
  c.set_auth("munge");
  for (const char* channel : {"peer_call", "data"}) {
    for (const char* reason : {"missing", "foreign", "replayed"}) {
      auto* a = c.add_auth_refusals();
      a->set_channel(channel);
      a->set_reason(reason);
      a->set_count(std::string(channel) == "data" && std::string(reason) == "replayed" ? 5 : 0);
    }
  }
  for (const char* function : {"alltoall", "ialltoallv"}) {
    for (const char* reason : {"selection_table", "rank_opted_out"}) {
      auto* h = c.add_handed_back();
      h->set_function(function);
      h->set_reason(reason);
      h->set_count(std::string(function) == "alltoall" && std::string(reason) == "selection_table" ? 6 : 0);
    }
  }
  return c;
}

TEST(MetricsText, ParsesStrictlyAndCarriesEveryCounter) {
  const std::string text = PrometheusText(Sample());
  const auto p = ParsePrometheusText(text);
  ASSERT_TRUE(p.ok) << p.error << "\n" << text;
  EXPECT_EQ(p.Value("ohio_collectives_served_total"), 10);
  EXPECT_EQ(p.Value("ohio_collectives_failed_total"), 2);
  EXPECT_EQ(p.Value("ohio_rounds_total"), 12);
  EXPECT_EQ(p.Value("ohio_bytes_local_total"), 4096);
  EXPECT_EQ(p.Value("ohio_bytes_sent_total"), 1 << 20);
  EXPECT_EQ(p.Value("ohio_bytes_received_total"), 3 << 20);
  EXPECT_EQ(p.Value("ohio_groups_failed_total"), 1);
  EXPECT_EQ(p.Value("ohio_segments_numa_bound_total"), 3);
  EXPECT_EQ(p.Value("ohio_segments_numa_refused_total"), 2);
  EXPECT_EQ(p.Value("ohio_errors_total", {{"kind", "timeout"}}), 3);
  EXPECT_EQ(p.Value("ohio_errors_total", {{"kind", "refused"}}), 0);
  EXPECT_EQ(p.Value("ohio_calls_handed_back_total", {{"function", "alltoall"}, {"reason", "selection_table"}}), 6);
  EXPECT_EQ(p.Value("ohio_calls_handed_back_total", {{"function", "ialltoallv"}, {"reason", "rank_opted_out"}}), 0);
  EXPECT_EQ(p.Value("ohio_groups"), 3);
  EXPECT_EQ(p.Value("ohio_data_connections"), 2);
  EXPECT_EQ(p.Value("ohio_queue_pairs"), 6);
  EXPECT_EQ(p.Value("ohio_bounce_puts_total"), 3);
  EXPECT_EQ(p.Value("ohio_direct_puts_total"), 40);
  EXPECT_EQ(p.Value("ohio_data_frames_sent_total"), 41);
  EXPECT_EQ(p.Value("ohio_data_frames_received_total"), 42);
  EXPECT_EQ(p.Value("ohio_control_frames_sent_total"), 43);
  EXPECT_EQ(p.Value("ohio_control_frames_received_total"), 44);
  EXPECT_EQ(p.Value("ohio_registrations_total"), 0);
  EXPECT_EQ(p.Value("ohio_segment_cache_hits_total"), 7);
  EXPECT_EQ(p.Value("ohio_segment_cache_misses_total"), 2);
  EXPECT_EQ(p.Value("ohio_segment_cache_evictions_total"), 1);
  EXPECT_EQ(p.Value("ohio_segment_cache_still_held_total"), 4);
  EXPECT_EQ(p.Value("ohio_segment_cache_bytes"), 3 << 20);
  EXPECT_EQ(p.Value("ohio_segment_cache_segments"), 2);
  EXPECT_EQ(p.Value("ohio_registered_memory_limit_bytes"), 256 << 20);
  EXPECT_EQ(p.Value("ohio_auth_info", {{"mode", "munge"}}), 1);
  EXPECT_EQ(p.Value("ohio_peer_auth_refusals_total", {{"channel", "data"}, {"reason", "replayed"}}), 5);
  EXPECT_EQ(p.Value("ohio_peer_auth_refusals_total", {{"channel", "peer_call"}, {"reason", "foreign"}}), 0);
  EXPECT_EQ(p.Value("ohio_info", {{"version", "0.1.0"}, {"node", "node \"7\"\\a"}, {"transport", "tcp"}}), 1);
  EXPECT_EQ(p.Value("ohio_collective_latency_seconds_bucket", {{"size_class", "0-1KiB"}, {"le", "1e-05"}}), 1);
  EXPECT_EQ(p.Value("ohio_collective_latency_seconds_bucket", {{"size_class", "0-1KiB"}, {"le", "+Inf"}}), 10);
  EXPECT_EQ(p.Value("ohio_collective_latency_seconds_count", {{"size_class", "0-1KiB"}}), 10);
  EXPECT_EQ(p.Value("ohio_collective_latency_seconds_sum", {{"size_class", "0-1KiB"}}), 1.25);
  EXPECT_EQ(p.families.at("ohio_collective_latency_seconds").type, "histogram");
  for (const auto& [name, f] : p.families) {
    EXPECT_FALSE(f.help.empty()) << name;
    if (f.type == "counter") {
      EXPECT_EQ(name.substr(name.size() - 6), "_total") << name;
    }
  }
}

TEST(PrometheusTextReader, RefusesWhatPrometheusWould) {
  const char* bad[] = {
      "x 1\n",                                                // no TYPE
      "# TYPE x counter\nx{a=\"1\" 1\n",                      // unterminated labels
      "# TYPE x counter\nx{a=1} 1\n",                         // unquoted label value
      "# TYPE x counter\nx one\n",                            // bad value
      "# TYPE x counter\n# TYPE x gauge\nx 1\n",              // second TYPE
      "# TYPE x counter\n# TYPE y counter\nx 1\ny 1\nx 2\n",  // not contiguous
      "# TYPE x counter\nx 1",                                // no final newline
      "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_count 1\nh_sum 0\n",  // not cumulative
      "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_count 1\nh_sum 0\n",                           // no +Inf
      "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_count 1\nh_sum 0\n",                        // count differs
      "# TYPE x counter\n9x 1\n",                                                                 // bad name
  };
  for (const char* text : bad) EXPECT_FALSE(ParsePrometheusText(text).ok) << text;
  EXPECT_TRUE(ParsePrometheusText("# HELP x a counter\n# TYPE x counter\nx{a=\"q\\\"\"} 1 1700000000\n").ok);
}

TEST(MetricsText, WritesAtomicallyAndReadably) {
  char tmpl[] = "/tmp/ohio-metrics-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string path = dir + "/ohiod.prom";
  std::string error;
  ASSERT_TRUE(WriteFileAtomically(path, "a\n", &error)) << error;
  ASSERT_TRUE(WriteFileAtomically(path, "b\n", &error)) << error;
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  EXPECT_NE(stat((path + ".tmp").c_str(), &st), 0);  // nothing left behind
  EXPECT_FALSE(WriteFileAtomically(dir + "/missing/ohiod.prom", "c\n", &error));
  EXPECT_NE(error.find("missing"), std::string::npos) << error;
  unlink(path.c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace ohio
