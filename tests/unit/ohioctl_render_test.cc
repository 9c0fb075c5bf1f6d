// What ohioctl prints: units, percentiles from buckets, JSON shapes scripts depend on, and the
// human tables' key facts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "client/ohioctl_cli/ohioctl_render.h"

namespace ohio::ctl {
namespace {

using ::testing::HasSubstr;

TEST(OhioctlRender, Units) {
  EXPECT_EQ(Bytes(0), "0 B");
  EXPECT_EQ(Bytes(1023), "1023 B");
  EXPECT_EQ(Bytes(1536), "1.5 KiB");
  EXPECT_EQ(Bytes(16u << 20), "16 MiB");
  EXPECT_EQ(Bytes(uint64_t{3} << 40), "3.0 TiB");
  EXPECT_EQ(Duration(0), "0s");
  EXPECT_EQ(Duration(75), "1m 15s");
  EXPECT_EQ(Duration(3725), "1h 2m");
  EXPECT_EQ(Duration(2 * 86400 + 3600), "2d 1h");
  EXPECT_EQ(Latency(250e-6), "250 µs");
  EXPECT_EQ(Latency(2.5e-3), "2.5 ms");
  EXPECT_EQ(Latency(10), "10 s");
  EXPECT_EQ(Latency(std::numeric_limits<double>::infinity()), "inf");
}

admin::LatencyHistogram Histogram() {
  admin::LatencyHistogram h;
  h.set_size_class("0-1KiB");
  h.set_count(100);
  h.set_sum_seconds(0.01);
  for (auto [le, n] : std::vector<std::pair<double, uint64_t>>{
           {1e-5, 10}, {1e-4, 60}, {1e-3, 99}, {std::numeric_limits<double>::infinity(), 100}}) {
    auto* b = h.add_buckets();
    b->set_le_seconds(le);
    b->set_count(n);
  }
  return h;
}

TEST(OhioctlRender, QuantilesAreBucketBounds) {
  const auto h = Histogram();
  EXPECT_DOUBLE_EQ(QuantileBound(h, 0.1), 1e-5);
  EXPECT_DOUBLE_EQ(QuantileBound(h, 0.5), 1e-4);
  EXPECT_DOUBLE_EQ(QuantileBound(h, 0.99), 1e-3);
  EXPECT_TRUE(std::isinf(QuantileBound(h, 1.0)));
  EXPECT_TRUE(std::isnan(QuantileBound(admin::LatencyHistogram(), 0.5)));
}

TEST(OhioctlRender, CountersJsonHasNumbersAndNoInfinity) {
  admin::CountersReply c;
  c.set_node_name("n0");
  c.set_collectives_served(uint64_t{1} << 40);
  auto* e = c.add_errors();
  e->set_kind("timeout");
  e->set_count(2);
  *c.add_latency() = Histogram();
  c.mutable_transport_counters()->set_data_frames_sent(7);
  c.mutable_transport_counters()->set_data_frames_received(8);
  c.mutable_transport_counters()->set_control_frames_sent(9);
  c.mutable_transport_counters()->set_control_frames_received(10);
  c.mutable_transport_counters()->set_rtr_retries(4);
  c.mutable_transport_counters()->add_rails("rxe0:1");
  c.mutable_transport_counters()->set_rc_pool(1);
  c.mutable_transport_counters()->set_datagram_peers(2);
  c.mutable_transport_counters()->set_datagram_puts(6);
  c.mutable_transport_counters()->set_datagrams_sent(70);
  c.mutable_transport_counters()->set_datagram_retransmissions(5);
  c.mutable_transport_counters()->set_rc_promotions(3);
  c.mutable_transport_counters()->set_rc_demotions(2);
  c.mutable_transport_counters()->set_rc_moves_refused(1);
  c.set_data_connections(3);
  c.set_peer_channels(2);
  c.mutable_segment_cache()->set_hits(5);
  c.mutable_segment_cache()->set_misses(2);
  c.mutable_segment_cache()->set_cached_segments(1);
  c.mutable_segment_cache()->set_cached_bytes(3 << 20);
  c.mutable_segment_cache()->set_in_use_bytes(6 << 20);
  c.mutable_segment_cache()->set_limit_bytes(256 << 20);
  c.set_auth("munge");
  auto* a = c.add_auth_refusals();
  a->set_channel("data");
  a->set_reason("replayed");
  a->set_count(3);
  auto* zero = c.add_auth_refusals();
  zero->set_channel("peer_call");
  zero->set_reason("foreign");
  auto* handed = c.add_handed_back();
  handed->set_function("alltoall");
  handed->set_reason("selection_table");
  handed->set_count(12);
  auto* none = c.add_handed_back();
  none->set_function("alltoallv");
  none->set_reason("rank_opted_out");
  const auto j = CountersJson(c);
  EXPECT_EQ(j["handed_back"]["alltoall"]["selection_table"].get<uint64_t>(), 12u);
  EXPECT_EQ(j["handed_back"]["alltoallv"]["rank_opted_out"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["auth"], "munge");
  EXPECT_EQ(j["auth_refusals"]["data"]["replayed"].get<uint64_t>(), 3u);
  EXPECT_EQ(j["auth_refusals"]["peer_call"]["foreign"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["collectives_served"].get<uint64_t>(), uint64_t{1} << 40);
  EXPECT_EQ(j["errors"]["timeout"].get<uint64_t>(), 2u);
  EXPECT_EQ(j["transport_counters"]["data_frames_sent"].get<uint64_t>(), 7u);
  EXPECT_EQ(j["transport_counters"]["control_frames_received"].get<uint64_t>(), 10u);
  EXPECT_EQ(j["transport_counters"]["rtr_retries"].get<uint64_t>(), 4u);
  EXPECT_EQ(j["peer_channels"].get<uint64_t>(), 2u);
  EXPECT_TRUE(j["latency"][0]["buckets"][3]["le_seconds"].is_null());
  EXPECT_EQ(j["latency"][0]["buckets"][3]["count"].get<uint64_t>(), 100u);
  // The dump is valid JSON (no inf/nan literals) that reads back the same.
  EXPECT_EQ(nlohmann::json::parse(j.dump()), j);
  const std::string text = CountersText(c);
  EXPECT_THAT(text, HasSubstr("timeout 2"));
  EXPECT_THAT(text, HasSubstr("handed back  alltoall selection_table 12\n"));
  EXPECT_THAT(text, HasSubstr("munge, refused: data replayed 3\n"));
  EXPECT_THAT(text, HasSubstr("data 7 sent, 8 received; control 9 sent, 10 received"));
  EXPECT_THAT(text, HasSubstr("3 to other nodes; 2 peer service channels open\n"));
  EXPECT_THAT(text, HasSubstr("queue pairs moved to RTR again 4 times (peer address not yet resolved); RC pool 1 per "
                              "rail, 2 peers over UD: 6 puts in 70 datagrams, 5 sent again, 0 duplicates, 0 refused; 3 "
                              "promoted to RC, 2 demoted to UD, 1 refused by the peer\n"));
  EXPECT_EQ(j["transport_counters"]["datagram_retransmissions"].get<uint64_t>(), 5u);
  EXPECT_EQ(j["transport_counters"]["rc_promotions"].get<uint64_t>(), 3u);
  EXPECT_EQ(j["transport_counters"]["rc_demotions"].get<uint64_t>(), 2u);
  EXPECT_EQ(j["transport_counters"]["rc_moves_refused"].get<uint64_t>(), 1u);
  EXPECT_THAT(text, HasSubstr("0-1KiB"));
  EXPECT_THAT(text, HasSubstr("<= 1 ms"));  // p99
  EXPECT_EQ(j["segment_cache"]["hits"].get<uint64_t>(), 5u);
  EXPECT_EQ(j["segment_cache"]["limit_bytes"].get<uint64_t>(), uint64_t{256} << 20);
  EXPECT_THAT(text, HasSubstr("cache        1 segment (3.0 MiB) cached; 5 reused, 2 missed, 0 evicted, 0 passed over "
                              "while another process held them; registered 6.0 MiB in use + 3.0 MiB cached of 256 MiB\n"));
}

TEST(OhioctlRender, StatusShowsPendingSettingsAndTheHcaNote) {
  admin::StatusReply s;
  s.set_node_name("n0");
  s.set_transport("tcp");
  s.set_data_address("10.0.0.1:7471");
  s.set_hca_note("libibverbs lists no RDMA devices on this node");
  auto* e = s.add_config();
  e->set_key("socket");
  e->set_value("/run/ohio/ohiod.sock");
  e->set_pending("/run/other.sock");
  auto* t = s.add_config();
  t->set_key("timeout-ms");
  t->set_value("60000");
  t->set_reloadable(true);
  s.set_auth("munge");
  const std::string text = StatusText(s);
  EXPECT_THAT(text, ::testing::ContainsRegex("auth +munge\n"));
  s.set_auth("none");
  EXPECT_THAT(StatusText(s), ::testing::ContainsRegex("auth +none \\(any host that reaches the peer and data ports is trusted\\)"));
  EXPECT_EQ(StatusJson(s)["auth"], "none");
  EXPECT_THAT(text, HasSubstr("tcp, data address 10.0.0.1:7471"));
  EXPECT_THAT(text, HasSubstr("none: libibverbs lists no RDMA devices"));
  EXPECT_THAT(text, HasSubstr("config now says /run/other.sock: needs a restart"));
  EXPECT_THAT(text, HasSubstr("* timeout-ms"));
  const auto j = StatusJson(s);
  EXPECT_EQ(j["config"]["timeout-ms"], "60000");
  EXPECT_EQ(j["pending_restart"]["socket"], "/run/other.sock");
  EXPECT_EQ(j["reloadable"], nlohmann::json::array({"timeout-ms"}));
  EXPECT_TRUE(j["hcas"].is_array());
}

TEST(OhioctlRender, HealthTextLeadsWithTheVerdict) {
  admin::HealthReply h;
  h.set_healthy(false);
  h.add_problems("ranks cannot reach ohiod: no such file");
  h.add_checks("the progress engine answers");
  const std::string text = HealthText(h);
  EXPECT_EQ(text.rfind("UNHEALTHY\n", 0), 0u);
  EXPECT_THAT(text, HasSubstr("problem: ranks cannot reach ohiod"));
  EXPECT_FALSE(HealthJson(h)["healthy"].get<bool>());
}

TEST(OhioctlRender, WatchLinesShowRates) {
  admin::CountersReply a, b;
  a.set_unix_time_ms(1000);
  b.set_unix_time_ms(3000);
  a.set_collectives_served(10);
  b.set_collectives_served(30);
  b.set_bytes_sent(4u << 20);
  const std::string first = WatchLine(nullptr, a);
  EXPECT_THAT(first, HasSubstr("totals: 10 collectives"));
  const std::string line = WatchLine(&a, b);
  EXPECT_THAT(line, HasSubstr("10.0"));       // 20 collectives in 2 s
  EXPECT_THAT(line, HasSubstr("2.0 MiB/s"));  // 4 MiB in 2 s
}

TEST(OhioctlRender, GroupsSayWhatTheirBuffersAreSizedFor) {
  admin::ListGroupsReply reply;
  admin::GroupSummary* hinted = reply.add_groups();
  hinted->set_key("aa");
  hinted->set_segment_bytes(12288);
  hinted->set_bytes_per_rank_hint(4096);
  admin::GroupSummary* full = reply.add_groups();
  full->set_key("bb");
  full->set_segment_bytes(16u << 20);
  const std::string text = GroupsText(reply);
  EXPECT_THAT(text, HasSubstr("SIZED FOR"));
  EXPECT_THAT(text, HasSubstr("12 KiB  <= 4.0 KiB/rank"));
  EXPECT_THAT(text, HasSubstr("16 MiB  configured"));
  EXPECT_EQ(GroupsJson(reply)["groups"][0]["bytes_per_rank_hint"], 4096);
}

TEST(OhioctlRender, GroupsSayWhereTheirSegmentIsPlaced) {
  admin::ListGroupsReply reply;
  admin::GroupSummary* joining = reply.add_groups();
  joining->set_key("aa");
  admin::GroupSummary* refused = reply.add_groups();
  refused->set_key("bb");
  admin::SegmentPlacement* p = refused->mutable_placement();
  p->set_decided(true);
  p->set_has_node(true);
  p->set_node(1);
  p->set_why("the ranks' allowed CPUs: 0 on node 0, 2 on node 1");
  p->set_bind_error("mbind(MPOL_PREFERRED, node 1): Invalid argument");
  p->add_rail_order("mlx5_1:1");
  p->add_rail_order("mlx5_0:1");
  admin::GroupSummary* spread = reply.add_groups();
  spread->set_key("cc");
  spread->mutable_placement()->set_decided(true);
  spread->mutable_placement()->set_why("no node holds more of the ranks' CPUs than another");
  const std::string text = GroupsText(reply);
  EXPECT_THAT(text, HasSubstr("pending"));
  EXPECT_THAT(text, HasSubstr("bb: NUMA 1 NOT BOUND (the ranks' allowed CPUs: 0 on node 0, 2 on node 1): "
                              "mbind(MPOL_PREFERRED, node 1): Invalid argument; rails mlx5_1:1, mlx5_0:1\n"));
  EXPECT_THAT(text, HasSubstr("cc: NUMA none (no node holds more of the ranks' CPUs than another); rails none\n"));
  const nlohmann::json j = GroupsJson(reply);
  EXPECT_EQ(j["groups"][0]["numa"]["decided"], false);
  EXPECT_TRUE(j["groups"][0]["numa"]["node"].is_null());
  EXPECT_EQ(j["groups"][1]["numa"]["node"], 1);
  EXPECT_EQ(j["groups"][1]["numa"]["bound"], false);
  EXPECT_EQ(j["groups"][1]["numa"]["rail_order"], nlohmann::json::parse(R"(["mlx5_1:1","mlx5_0:1"])"));
  EXPECT_TRUE(j["groups"][2]["numa"]["node"].is_null());
}

}  // namespace
}  // namespace ohio::ctl
