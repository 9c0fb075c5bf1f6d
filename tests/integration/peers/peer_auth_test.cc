// Peer authentication with MUNGE: real ohiods using a real munged with a generated key, and an
// intruder (a daemon, or this test speaking the wire itself) whose munged has another key. The
// intruder cannot open a group, connect queue pairs or send a data frame; a replayed, missing or
// misdirected credential is refused with its reason, logged and counted; the cluster's own job
// runs and is verified byte for byte with auth on.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "common/little_endian.h"
#include "common/version.h"
#include "daemon/peers/peer_auth.h"
#include "proto/peer.grpc.pb.h"
#include "tests/harness/cluster.h"
#include "tests/harness/munged.h"
#include "tests/harness/rank_job.h"

namespace ohio::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(60);

bool Contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

std::vector<std::string> MungeFlags(const Munged& m) { return {"--auth", "munge", "--munge-socket", m.socket()}; }

uint64_t Refusals(const admin::CountersReply& c, const std::string& channel, const std::string& reason) {
  for (const auto& a : c.auth_refusals()) {
    if (a.channel() == channel && a.reason() == reason) return a.count();
  }
  ADD_FAILURE() << "no refusal counter " << channel << "/" << reason;
  return 0;
}

uint64_t AllRefusals(const admin::CountersReply& c) {
  uint64_t n = 0;
  for (const auto& a : c.auth_refusals()) n += a.count();
  return n;
}

// Credentials as a daemon of the cluster served by `munged` would mint them, with the same code.
std::string Mint(const Munged& munged, const std::string& purpose, const std::string& target) {
  auto auth = PeerAuth::Start("munge", munged.socket(), "test");
  EXPECT_TRUE(auth.ok()) << auth.status().message();
  if (!auth.ok()) return "";
  auto cred = auth.value()->Mint(purpose, target);
  EXPECT_TRUE(cred.ok()) << cred.status().message();
  return cred.ok() ? cred.value() : "";
}

std::unique_ptr<peer::Peer::Stub> PeerStub(const std::string& peer_address) {
  return peer::Peer::NewStub(grpc::CreateChannel(peer_address, grpc::InsecureChannelCredentials()));
}

grpc::Status CallHello(peer::Peer::Stub* stub, const std::string& credential) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (!credential.empty()) ctx.AddMetadata(kMungeMetadataKey, credential);
  peer::HelloRequest req;
  req.set_protocol_version(kPeerProtocolVersion);
  req.set_node_name("n1");
  peer::HelloReply reply;
  return stub->Hello(&ctx, req, &reply);
}

grpc::Status CallConnectQueuePairs(peer::Peer::Stub* stub, const std::string& credential) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (!credential.empty()) ctx.AddMetadata(kMungeMetadataKey, credential);
  peer::ConnectQueuePairsRequest req;
  req.set_protocol_version(kPeerProtocolVersion);
  req.set_from_node("n1");
  req.set_incarnation(1);
  req.set_dial_seq(1);
  peer::ConnectQueuePairsReply reply;
  return stub->ConnectQueuePairs(&ctx, req, &reply);
}

// The tcp transport's frame header (daemon/transport/tcp/tcp_frame.h): type word ("OH" in the
// high half), immediate, region key, offset, length.
std::string Frame(uint32_t type, uint64_t key, uint64_t offset, const std::string& payload) {
  char h[32];
  PutLittleEndian<uint32_t>(h, 0x4f480000u | type);
  PutLittleEndian<uint32_t>(h + 4, 0);
  PutLittleEndian<uint64_t>(h + 8, key);
  PutLittleEndian<uint64_t>(h + 16, offset);
  PutLittleEndian<uint64_t>(h + 24, payload.size());
  return std::string(h, sizeof(h)) + payload;
}
constexpr uint32_t kHelloFrame = 1;
constexpr uint32_t kPutFrame = 2;

// A raw data connection to "127.0.0.1:port", as any host on the network could open one.
class RawDataConnection {
 public:
  explicit RawDataConnection(const std::string& address) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    connected_ = connect(fd_, reinterpret_cast<struct sockaddr*>(&a), sizeof(a)) == 0;
  }
  ~RawDataConnection() { close(fd_); }
  bool connected() const { return connected_; }
  // False once the daemon has closed the connection.
  bool Send(const std::string& bytes) { return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size()); }
  // Whether the daemon closed the connection within the deadline (it never writes to an
  // accepted connection before the hello is taken, so any readable event is the close).
  bool ClosedByPeer(std::chrono::milliseconds deadline) {
    struct pollfd p = {fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(deadline.count())) != 1) return false;
    char c;
    return recv(fd_, &c, 1, 0) <= 0;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

class PeerAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_munged_.Start()) << cluster_munged_.Log();
    ASSERT_TRUE(intruder_munged_.Start()) << intruder_munged_.Log();
  }

  TempDir dir_;
  Munged cluster_munged_{dir_, "cluster"};
  Munged intruder_munged_{dir_, "intruder"};
};

TEST_F(PeerAuthTest, JobAcrossNodesIsVerifiedWithAuthOn) {
  Cluster cluster(dir_, 2, MungeFlags(cluster_munged_));
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  StatusQuery s = QueryStatus(cluster.node(0).admin_socket());
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.reply.auth(), "munge");
  RankJob job(dir_, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 2), "auth-on",
              {"--bytes", "1", "4096", "65536", "--iterations", "20"});
  for (int code : job.Wait(kDeadline)) EXPECT_EQ(code, 0) << job.Outputs() << cluster.Logs();
  for (uint32_t n = 0; n < 2; ++n) {
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    EXPECT_EQ(c.auth(), "munge");
    EXPECT_EQ(AllRefusals(c), 0u) << cluster.Logs();
    EXPECT_GT(c.transport_counters().data_frames_received(), 0u);
  }
  EXPECT_TRUE(Contains(cluster.node(0).Log(), "peers authenticate with MUNGE (munged at " + cluster_munged_.socket()))
      << cluster.node(0).Log();
}

TEST_F(PeerAuthTest, IntruderDaemonCannotOpenAGroup) {
  Cluster cluster(dir_, 3, MungeFlags(cluster_munged_));
  cluster.AddFlags(2, MungeFlags(intruder_munged_));
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  RankJob job(dir_, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(3, 1), "intruded",
              {"--bytes", "64", "--iterations", "1"});
  for (int code : job.Wait(kDeadline)) EXPECT_NE(code, 0) << job.Outputs() << cluster.Logs();
  // The cluster's ranks learn that the intruder refused them (it cannot decode their
  // credentials), the intruder's rank that the cluster refused it.
  EXPECT_TRUE(Contains(job.rank(0).Output(), "peer n2 refused this node: node n2 refused the call: munge credential "
                                             "foreign"))
      << job.Outputs();
  const bool by_n0 = Contains(job.rank(2).Output(), "refused this node: node n0 refused the call: munge credential foreign");
  EXPECT_TRUE(by_n0 ||
              Contains(job.rank(2).Output(), "refused this node: node n1 refused the call: munge credential foreign"))
      << job.Outputs();
  for (uint32_t n = 0; n < 2; ++n) {
    const admin::CountersReply c = QueryCounters(cluster.node(n).admin_socket());
    EXPECT_EQ(c.bytes_received(), 0u);
    EXPECT_EQ(c.transport_counters().data_frames_received(), 0u);
    // The node whose refusal reached the intruder's rank counted it, and refused its first call
    // to it, a Hello (it tells no node that never answered it). The other node may never have
    // been called: the intruder's group failed at the first refusal.
    if (n == (by_n0 ? 0u : 1u)) {
      EXPECT_GE(Refusals(c, "peer_call", "foreign"), 1u) << cluster.Logs();
      EXPECT_TRUE(Contains(cluster.node(n).Log(), "refused peer call Hello from 'n2'")) << cluster.node(n).Log();
    }
  }
  EXPECT_GE(Refusals(QueryCounters(cluster.node(2).admin_socket()), "peer_call", "foreign"), 1u);
}

// One node with auth = munge, one with none: each side's ranks learn the real cause at once,
// not one side at its timeout that the other "did not set the group up on their side".
TEST_F(PeerAuthTest, NodesThatAuthenticateDifferentlySayWhyOnBothSides) {
  Cluster cluster(dir_, 2, {"--timeout-ms", "30000"});  // the harness's auth = none
  cluster.AddFlags(0, MungeFlags(cluster_munged_));
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const auto began = std::chrono::steady_clock::now();
  RankJob job(dir_, ControlSockets(cluster), NodeNames(cluster), ConsecutivePlacement(2, 1), "mixed-auth",
              {"--bytes", "64", "--iterations", "1"});
  for (int code : job.Wait(kDeadline)) EXPECT_NE(code, 0) << job.Outputs() << cluster.Logs();
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(15)) << "waited for the group's timeout";
  EXPECT_TRUE(Contains(job.rank(0).Output(), "node n1 runs with auth = none and this node (n0) with auth = munge"))
      << job.Outputs();
  EXPECT_TRUE(Contains(job.rank(1).Output(), "peer n0 refused this node: node n0 refused the call: munge credential "
                                             "missing"))
      << job.Outputs();
  for (uint32_t r = 0; r < 2; ++r) {
    EXPECT_FALSE(Contains(job.rank(r).Output(), "did not set the group up on their side")) << job.Outputs();
  }
}

TEST_F(PeerAuthTest, PeerCallsNeedAFreshCredentialForThisMethodAndNode) {
  Cluster cluster(dir_, 2, MungeFlags(cluster_munged_));
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  StatusQuery s = QueryStatus(cluster.node(0).admin_socket());
  ASSERT_TRUE(s.ok) << s.error;
  const std::string admin = cluster.node(0).admin_socket();
  // The peer port is in n1's peers table, as every node's is.
  std::string peer_address;
  for (const auto& e : s.reply.config()) {
    if (e.key() == "peer-port") peer_address = "127.0.0.1:" + e.value();
  }
  ASSERT_FALSE(peer_address.empty());
  auto stub = PeerStub(peer_address);

  // The intruder's ConnectQueuePairs, missing and foreign: refused before the method looks at
  // anything (a good credential gets as far as "not verbs").
  grpc::Status missing = CallConnectQueuePairs(stub.get(), "");
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(missing.error_message(),
            "node n0 refused the call: munge credential missing: this node runs with auth = munge");
  grpc::Status foreign = CallConnectQueuePairs(stub.get(), Mint(intruder_munged_, "ConnectQueuePairs", "n0"));
  EXPECT_EQ(foreign.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Contains(foreign.error_message(),
                       "node n0 refused the call: munge credential foreign: not made with this cluster's munge key"))
      << foreign.error_message();
  grpc::Status good = CallConnectQueuePairs(stub.get(), Mint(cluster_munged_, "ConnectQueuePairs", "n0"));
  EXPECT_EQ(good.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(good.error_message(), "node n0 uses the tcp transport, not verbs");

  // A good credential captured and sent again.
  const std::string hello = Mint(cluster_munged_, "Hello", "n0");
  EXPECT_TRUE(CallHello(stub.get(), hello).ok());
  grpc::Status replayed = CallHello(stub.get(), hello);
  EXPECT_EQ(replayed.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Contains(replayed.error_message(), "node n0 refused the call: munge credential replayed"))
      << replayed.error_message();

  // Good credentials minted for another method, or for another node.
  grpc::Status other_method = CallHello(stub.get(), Mint(cluster_munged_, "OpenGroup", "n0"));
  EXPECT_EQ(other_method.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Contains(other_method.error_message(),
                       "munge credential wrong_purpose: minted as 'ohio-peer/" + std::to_string(kPeerProtocolVersion) +
                           " OpenGroup for n0', shown here as 'ohio-peer/" + std::to_string(kPeerProtocolVersion) +
                           " Hello for n0'"))
      << other_method.error_message();
  grpc::Status other_node = CallHello(stub.get(), Mint(cluster_munged_, "Hello", "n1"));
  EXPECT_EQ(other_node.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Contains(other_node.error_message(), "munge credential wrong_purpose")) << other_node.error_message();
  grpc::Status garbage = CallHello(stub.get(), "MUNGE:not-a-credential:");
  EXPECT_EQ(garbage.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Contains(garbage.error_message(), "munge credential malformed")) << garbage.error_message();

  const admin::CountersReply c = QueryCounters(admin);
  EXPECT_EQ(Refusals(c, "peer_call", "missing"), 1u);
  EXPECT_EQ(Refusals(c, "peer_call", "foreign"), 1u);
  EXPECT_EQ(Refusals(c, "peer_call", "replayed"), 1u);
  EXPECT_EQ(Refusals(c, "peer_call", "wrong_purpose"), 2u);
  EXPECT_EQ(Refusals(c, "peer_call", "malformed"), 1u);
  EXPECT_EQ(AllRefusals(c), 6u);
  EXPECT_TRUE(Contains(cluster.node(0).Log(), "refused peer call ConnectQueuePairs from 'n1' at ")) << cluster.node(0).Log();
}

TEST_F(PeerAuthTest, DataConnectionsNeedAFreshCredentialBeforeAnyFrame) {
  Cluster cluster(dir_, 2, MungeFlags(cluster_munged_));
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  StatusQuery s = QueryStatus(cluster.node(0).admin_socket());
  ASSERT_TRUE(s.ok) << s.error;
  const std::string data = s.reply.data_address();
  const std::string admin = cluster.node(0).admin_socket();
  // Whatever a put would carry, it must not land: a key and offset the daemon might use.
  const std::string put = Frame(kPutFrame, 1, 0, std::string(4096, 'X'));

  // The intruder's credential, then a put.
  {
    RawDataConnection intruder(data);
    ASSERT_TRUE(intruder.connected());
    intruder.Send(Frame(kHelloFrame, 0, 0, std::string("n1") + '\0' + Mint(intruder_munged_, kDataPurpose, "n0")) + put);
    EXPECT_TRUE(intruder.ClosedByPeer(std::chrono::seconds(10)));
  }
  // No credential: a put first, or a hello without one.
  {
    RawDataConnection bare(data);
    ASSERT_TRUE(bare.connected());
    bare.Send(put);
    EXPECT_TRUE(bare.ClosedByPeer(std::chrono::seconds(10)));
  }
  {
    RawDataConnection nameless(data);
    ASSERT_TRUE(nameless.connected());
    nameless.Send(Frame(kHelloFrame, 0, 0, "n1") + put);
    EXPECT_TRUE(nameless.ClosedByPeer(std::chrono::seconds(10)));
  }
  // A good credential is let in once (as node "n7", which no group has); sent again, refused.
  const std::string cred = Mint(cluster_munged_, kDataPurpose, "n0");
  RawDataConnection first(data);
  ASSERT_TRUE(first.connected());
  first.Send(Frame(kHelloFrame, 0, 0, std::string("n7") + '\0' + cred));
  // Taken before the replay is sent: the daemon reads connections in whatever order.
  const auto until = std::chrono::steady_clock::now() + kDeadline;
  for (;;) {
    s = QueryStatus(admin);
    ASSERT_TRUE(s.ok) << s.error;
    if (s.reply.data_connections() == 1) break;
    ASSERT_LT(std::chrono::steady_clock::now(), until) << cluster.node(0).Log();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  {
    RawDataConnection replay(data);
    ASSERT_TRUE(replay.connected());
    replay.Send(Frame(kHelloFrame, 0, 0, std::string("n8") + '\0' + cred) + put);
    EXPECT_TRUE(replay.ClosedByPeer(std::chrono::seconds(10)));
  }
  EXPECT_FALSE(first.ClosedByPeer(std::chrono::milliseconds(200)));
  s = QueryStatus(admin);
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(std::vector<std::string>(s.reply.connected_peers().begin(), s.reply.connected_peers().end()),
            std::vector<std::string>{"n7"});

  const admin::CountersReply c = QueryCounters(admin);
  EXPECT_EQ(Refusals(c, "data", "foreign"), 1u);
  EXPECT_EQ(Refusals(c, "data", "missing"), 2u);
  EXPECT_EQ(Refusals(c, "data", "replayed"), 1u);
  EXPECT_EQ(AllRefusals(c), 4u);
  EXPECT_EQ(c.transport_counters().data_frames_received(), 0u);
  EXPECT_EQ(c.bytes_received(), 0u);
  const std::string log = cluster.node(0).Log();
  EXPECT_TRUE(Contains(log, "refused data connection data from 'n1' at 127.0.0.1:")) << log;
  EXPECT_TRUE(Contains(log, "munge credential replayed")) << log;
}

TEST_F(PeerAuthTest, ACheckWhoseCallerGaveUpIsNotMadeAndTheCredentialStaysUnused) {
  auto auth = PeerAuth::Start("munge", cluster_munged_.socket(), "n1");
  ASSERT_TRUE(auth.ok()) << auth.status().message();
  const std::string credential = Mint(cluster_munged_, "OpenGroup", "n1");
  ASSERT_FALSE(credential.empty());
  // The call's caller gave up a millisecond ago: no verdict (a kTimeout the caller may retry,
  // not a refusal), and munged is not asked.
  const auto gone = PeerAuth::Clock::now() - std::chrono::milliseconds(1);
  const Status late = auth.value()->Check(AuthChannel::kPeerCall, "OpenGroup", credential, "'n0' at test", gone);
  EXPECT_EQ(late.code(), Code::kTimeout) << late.message();
  EXPECT_TRUE(Contains(late.message(), "the caller gave up before munged could be asked")) << late.message();
  EXPECT_EQ(auth.value()->refusals(AuthChannel::kPeerCall, AuthRefusal::kReplayed), 0u);
  // Had munged decoded it, its replay cache would refuse it now.
  const Status live = auth.value()->Check(AuthChannel::kPeerCall, "OpenGroup", credential, "'n0' at test",
                                          PeerAuth::Clock::now() + std::chrono::seconds(10));
  EXPECT_TRUE(live.ok()) << live.message();
  // Nor is a credential minted for a call that has given up.
  const auto minted = auth.value()->Mint("OpenGroup", "n2", gone);
  ASSERT_FALSE(minted.ok());
  EXPECT_EQ(minted.status().code(), Code::kTimeout) << minted.status().message();
}

TEST(PeerAuthStart, RefusesToStartWithoutMungedUnlessAuthIsNone) {
  TempDir dir;
  Daemon without(dir, {"--auth", "munge", "--munge-socket", dir.file("no-munged.sock")}, "without");
  EXPECT_FALSE(without.Start());
  EXPECT_EQ(without.Stop(), 1);
  EXPECT_TRUE(Contains(without.Log(), "peer authentication: no munged at " + dir.file("no-munged.sock") +
                                          ": start munge or set auth = none"))
      << without.Log();
  Daemon none(dir, {"--munge-socket", dir.file("no-munged.sock")}, "none");  // the harness's --auth none
  ASSERT_TRUE(none.Start()) << none.Log();
  StatusQuery s = QueryStatus(none.admin_socket());
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.reply.auth(), "none");
  EXPECT_TRUE(Contains(none.Log(), "auth = none: any host that reaches ports")) << none.Log();
  EXPECT_EQ(none.Stop(), 0);
}

}  // namespace
}  // namespace ohio::testing
