// Which data transport a real ohiod runs on a host without RDMA (this one): auto falls back to
// tcp and says why, tcp is taken as asked, verbs refuses to start with the reason, and a
// transport that does not exist is a configuration error. (With RDMA, tests/vm shows auto
// taking verbs.)
#include <gtest/gtest.h>

#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"

namespace ohio::testing {
namespace {

bool Contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

TEST(TransportChoice, AutoFallsBackToTcpAndSaysWhy) {
  TempDir dir;
  Daemon d(dir);  // no --transport: the default is auto
  ASSERT_TRUE(d.Start()) << d.Log();
  StatusQuery q = QueryStatus(d.admin_socket());
  ASSERT_TRUE(q.ok) << q.error;
  EXPECT_EQ(q.reply.transport(), "tcp");
  EXPECT_TRUE(Contains(q.reply.transport_choice(), "transport = auto: no usable RDMA port")) << q.reply.transport_choice();
  EXPECT_TRUE(Contains(d.Log(), "transport tcp at")) << d.Log();
  EXPECT_EQ(q.reply.transport_counters().queue_pairs(), 0u);
  EXPECT_EQ(q.reply.transport_counters().rails_size(), 0);
  EXPECT_EQ(d.Stop(), 0) << d.Log();
}

TEST(TransportChoice, TcpAsAsked) {
  TempDir dir;
  Daemon d(dir, {"--transport", "tcp"});
  ASSERT_TRUE(d.Start()) << d.Log();
  StatusQuery q = QueryStatus(d.admin_socket());
  ASSERT_TRUE(q.ok) << q.error;
  EXPECT_EQ(q.reply.transport(), "tcp");
  EXPECT_EQ(q.reply.transport_choice(), "transport = tcp");
  EXPECT_EQ(d.Stop(), 0) << d.Log();
}

TEST(TransportChoice, VerbsWithoutAnRdmaPortRefusesToStart) {
  TempDir dir;
  Daemon d(dir, {"--transport", "verbs"});
  EXPECT_FALSE(d.Start());
  EXPECT_NE(d.Stop(), 0);
  EXPECT_TRUE(Contains(d.Log(), "data transport: transport = verbs, but")) << d.Log();
}

TEST(TransportChoice, AutoWithAnUnknownDeviceFallsBackToTcp) {
  TempDir dir;
  Daemon d(dir, {"--transport", "auto", "--hca", "mlx5_9:1"});
  ASSERT_TRUE(d.Start()) << d.Log();
  StatusQuery q = QueryStatus(d.admin_socket());
  ASSERT_TRUE(q.ok) << q.error;
  EXPECT_EQ(q.reply.transport(), "tcp");
  EXPECT_EQ(d.Stop(), 0) << d.Log();
}

TEST(TransportChoice, UnknownTransportIsAConfigurationError) {
  TempDir dir;
  Daemon d(dir, {"--transport", "rdma"});
  EXPECT_FALSE(d.Start());
  EXPECT_EQ(d.Stop(), 2);
  EXPECT_TRUE(Contains(d.Log(), "--transport")) << d.Log();
}

}  // namespace
}  // namespace ohio::testing
