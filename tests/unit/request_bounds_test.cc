// The longest control request ohiod reads (daemon/control/request_bounds.h): every join the
// registry could admit fits it, encoded at its longest, and a join for a million ranks on one
// node with the default settings does not.
#include "daemon/control/request_bounds.h"

#include <gtest/gtest.h>

#include <string>

namespace ohio {
namespace {

// A join of `ranks` ranks over `nodes` nodes, every field at its longest: names of
// `name_bytes`, the last node's index for every rank, the longest algorithm names.
std::string LongestJoin(uint32_t ranks, uint32_t nodes, size_t name_bytes) {
  control::ClientMessage m;
  auto* j = m.mutable_join();
  j->set_key(std::string(16, 'k'));
  j->set_size(ranks);
  j->set_rank(ranks - 1);
  for (uint32_t n = 0; n < nodes; ++n) {
    std::string name = std::to_string(n);
    name.resize(name_bytes, 'x');
    j->add_node_names(name);
  }
  for (uint32_t r = 0; r < ranks; ++r) j->add_rank_node(nodes - 1);
  j->set_algorithm("v3");
  j->set_bytes_per_rank_hint(~uint64_t{0});
  j->set_replaces_key(std::string(16, 'r'));
  j->set_internode("hypercube");
  return m.SerializeAsString();
}

TEST(RequestBounds, DefaultsAdmitTheLargestGroupOnOneNodeAndNoMillionRankJoin) {
  DaemonConfig config;
  config.node_name = "n0";
  const RequestBounds b = ComputeRequestBounds(config);
  // 2 x 2896^2 <= 16 MiB < 2 x 2897^2: the SSB's two halves.
  EXPECT_EQ(b.max_ranks, 2896u);
  EXPECT_EQ(b.max_nodes, 1u);
  EXPECT_GE(b.max_request_bytes, LongestJoin(2896, 1, 253).size());
  // Names of nodes the cluster does not know, one per rank, still reach the registry's refusal.
  EXPECT_GE(b.max_request_bytes, LongestJoin(2896, 2896, 253).size());
  EXPECT_LT(b.max_request_bytes, 1u << 20);  // a million ranks on one node: 1 MiB of rank_node
  EXPECT_LT(b.max_request_bytes, config.max_message_bytes);
}

TEST(RequestBounds, PeersWidenItAndPeerHostsLeaveOnlyMaxMessageBytes) {
  DaemonConfig config;
  config.node_name = "n0";
  for (int i = 1; i < 128; ++i) config.peers.push_back("node" + std::to_string(i) + "=10.0.0." + std::to_string(i) + ":7470");
  const RequestBounds b = ComputeRequestBounds(config);
  EXPECT_EQ(b.max_nodes, 128u);
  // size * ceil(size / 128) <= 16 MiB: 46,336 ranks on 128 nodes fit (362 per node).
  EXPECT_GE(b.max_ranks, 46336u);
  EXPECT_GE(b.max_request_bytes, std::min<uint64_t>(LongestJoin(46336, 128, 253).size(), config.max_message_bytes));
  config.peer_hosts = "*";
  const RequestBounds any = ComputeRequestBounds(config);
  EXPECT_EQ(any.max_request_bytes, config.max_message_bytes);
}

TEST(RequestBounds, SmallerSsbOrGroupLimitNarrowsIt) {
  DaemonConfig config;
  config.node_name = "n0";
  config.ssb_bytes = 4096;
  EXPECT_EQ(ComputeRequestBounds(config).max_ranks, 45u);  // 2 x 45^2 = 4050
  config.ssb_bytes = 16u << 20;
  config.max_group_ranks = 64;
  const RequestBounds b = ComputeRequestBounds(config);
  EXPECT_EQ(b.max_ranks, 64u);
  EXPECT_GE(b.max_request_bytes, LongestJoin(64, 64, 253).size());
  EXPECT_LT(b.max_request_bytes, 20000u);
}

}  // namespace
}  // namespace ohio
