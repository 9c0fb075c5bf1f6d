// Daemons of different peer protocol versions refuse each other with a clear error, in both
// directions: the real ohiod's peer service refusing a caller, and its bootstrap refusing a peer
// that answers with another version. The other side is a gRPC server in this test standing in
// for an ohiod of another version (no such build exists to run).
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include "common/version.h"
#include "proto/peer.grpc.pb.h"
#include "tests/harness/cluster.h"
#include "tests/harness/loopback_server.h"
#include "tests/harness/rank_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(60);

class FutureDaemon final : public peer::Peer::Service {
 public:
  grpc::Status Hello(grpc::ServerContext*, const peer::HelloRequest*, peer::HelloReply* reply) override {
    reply->set_protocol_version(kPeerProtocolVersion + 98);
    reply->set_node_name("n1");
    reply->set_transport("tcp");
    reply->set_data_address("127.0.0.1:1");
    return grpc::Status::OK;
  }
};

TEST(PeerVersion, BootstrapRefusesAPeerOfAnotherVersion) {
  TempDir dir;
  FutureDaemon future;
  int port = 0;
  auto server = ServeOnLoopback(&future, &port);
  ASSERT_TRUE(server);
  Daemon n0(dir, {"--node-name", "n0", "--peer", "n1=127.0.0.1:" + std::to_string(port)}, "n0");
  ASSERT_TRUE(n0.Start()) << n0.Log();
  // Rank 0 of a group whose other rank would live on n1.
  Process rank(std::vector<std::string>{RunfilePath("tests/tools/alltoall_rank"), "--socket", n0.socket(), "--key",
                                        KeyHex("future"), "--size", "2", "--rank", "0", "--nodes", "n0", "n1",
                                        "--rank-node", "0", "1", "--bytes", "8", "--expect", "refused"},
               dir.file("rank.out"));
  EXPECT_EQ(rank.Wait(kDeadline), 0) << rank.Output() << n0.Log();
  EXPECT_NE(rank.Output().find("speaking peer protocol " + std::to_string(kPeerProtocolVersion + 98)),
            std::string::npos)
      << rank.Output();
  server->Shutdown();
}

// A real ohiod (n0) and a plain gRPC stub on its peer port, as another node's daemon would call it.
class PeerServiceCaller : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(n0.Start()) << n0.Log();
    stub = peer::Peer::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  }
  TempDir dir;
  const int port = FreePorts(1)[0];
  Daemon n0{dir, {"--node-name", "n0", "--peer-port", std::to_string(port)}, "n0"};
  std::unique_ptr<peer::Peer::Stub> stub;
};

TEST_F(PeerServiceCaller, PeerServiceRefusesACallerOfAnotherVersion) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  peer::OpenGroupRequest req;
  req.set_protocol_version(kPeerProtocolVersion + 98);
  req.set_from_node("n9");
  req.set_key(std::string(16, 'k'));
  peer::OpenGroupReply reply;
  grpc::Status s = stub->OpenGroup(&ctx, req, &reply);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("speaks peer protocol " + std::to_string(kPeerProtocolVersion)), std::string::npos)
      << s.error_message();
}

// A caller of this version whose SideOpened names a key of the wrong size is told that, not
// that it speaks another protocol; and the daemon goes on serving.
TEST_F(PeerServiceCaller, SideOpenedWithAKeyOfTheWrongSizeIsRefusedAsSuch) {
  for (const char* version_case : {"this", "other"}) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    peer::SideOpenedRequest req;
    const bool other = std::string(version_case) == "other";
    req.set_protocol_version(other ? kPeerProtocolVersion + 98 : kPeerProtocolVersion);
    req.set_from_node("n9");
    req.set_key(std::string(7, 'k'));
    peer::SideOpenedReply reply;
    grpc::Status s = stub->SideOpened(&ctx, req, &reply);
    if (other) {
      // The version is checked first: a caller of another version may lay its keys out otherwise.
      EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
      EXPECT_NE(s.error_message().find("speaks peer protocol"), std::string::npos) << s.error_message();
    } else {
      EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
      EXPECT_EQ(s.error_message(), "a group key is 16 bytes, not 7");
    }
  }
  EXPECT_TRUE(n0.running()) << n0.Log();
}

}  // namespace
}  // namespace ohio::testing
