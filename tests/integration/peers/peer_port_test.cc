// ohiod's peer service owns its port: gRPC servers set SO_REUSEPORT by default, with which a
// second process could bind the same port and take a share of the peers' calls (a CI run saw a
// peer's bootstrap answered by another test's daemon on the same port). Here a gRPC server with
// gRPC's defaults holds a port; an ohiod told to listen there must refuse to start, saying so.
// The test harness, which chooses free ports before its daemons bind them, starts a cluster
// again on fresh ports when that happens.
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <string>

#include "proto/peer.grpc.pb.h"
#include "tests/harness/cluster.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/loopback_server.h"
#include "tests/harness/rank_job.h"

namespace ohio::testing {
namespace {

TEST(PeerPort, ASecondListenerOnThePeerPortKeepsOhiodFromStarting) {
  TempDir dir;
  peer::Peer::Service squatter;
  int port = 0;
  auto server = ServeOnLoopback(&squatter, &port);
  ASSERT_TRUE(server);
  Daemon d(dir, {"--node-name", "n0", "--listen", "127.0.0.1", "--peer-port", std::to_string(port)}, "n0");
  EXPECT_FALSE(d.Start()) << d.Log();
  EXPECT_NE(d.Log().find("peer service: cannot listen on 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << d.Log();
  server->Shutdown();
}

// Another process takes node 1's peer port after the cluster chose it: Start makes the cluster
// again on fresh ports, and a job across its nodes passes.
TEST(PeerPort, ClusterStartsAgainOnFreshPortsWhenOneWasTaken) {
  TempDir dir;
  Cluster cluster(dir, 2);
  const int taken = cluster.peer_port(1);
  peer::Peer::Service squatter;
  int port = taken;
  auto server = ServeOnLoopback(&squatter, &port);
  ASSERT_TRUE(server);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  EXPECT_NE(cluster.peer_port(1), taken);
  RankJob job(dir, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 1), "fresh-ports",
              {"--bytes", "4096", "--iterations", "3"});
  for (int code : job.Wait(std::chrono::seconds(60))) EXPECT_EQ(code, 0) << job.Outputs() << cluster.Logs();
  server->Shutdown();
}

}  // namespace
}  // namespace ohio::testing
