#include "daemon/peers/queue_pair_dialer.h"

#include <grpcpp/grpcpp.h>

#include <chrono>

#include "common/version.h"
#include "daemon/peers/endpoint_proto.h"

namespace ohio {
namespace {

// The other daemon makes a queue pair and registers a receive ring per rail, and connects them,
// before it answers: longer than a hello, still bounded. Connecting may try RTR again for up to
// the transport's budget while our address is not resolved there; its answer must come in time.
constexpr std::chrono::seconds kDialDeadline{10};
static_assert(kDialDeadline >= 2 * VerbsTransport::kRtrRetryBudget,
              "a peer that retries RTR for its whole budget must still answer within the dial's deadline");

}  // namespace

QueuePairDialer::QueuePairDialer(std::string self, const PeerAuth* auth,
                                 std::function<std::string(const std::string&)> address_of)
    : self_(std::move(self)), auth_(auth), address_of_(std::move(address_of)) {}

Result<DialAnswer> QueuePairDialer::Dial(const std::string& node, const DialOffer& offer) {
  std::shared_ptr<peer::Peer::Stub> stub;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& s = stubs_[node];
    if (!s) s = peer::Peer::NewStub(grpc::CreateChannel(address_of_(node), grpc::InsecureChannelCredentials()));
    stub = s;
  }
  peer::ConnectQueuePairsRequest req;
  req.set_protocol_version(kPeerProtocolVersion);
  req.set_from_node(self_);
  req.set_incarnation(offer.incarnation);
  req.set_dial_seq(offer.dial_seq);
  for (const QpEndpoint& e : offer.endpoints) EndpointToProto(e, req.add_endpoints());
  for (const QpEndpoint& e : offer.datagram_endpoints) EndpointToProto(e, req.add_datagram_endpoints());
  req.set_datagram_only(offer.datagram_only);
  peer::ConnectQueuePairsReply reply;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kDialDeadline);
  auto cred = auth_->Mint("ConnectQueuePairs", node);
  if (!cred.ok()) return Status(Code::kRefused, "cannot call node " + node + ": " + cred.status().message());
  if (!cred.value().empty()) ctx.AddMetadata(kMungeMetadataKey, cred.value());
  grpc::Status s = stub->ConnectQueuePairs(&ctx, req, &reply);
  if (s.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
    return Status(Code::kRefused, "peer " + node + " refused this node: " + s.error_message());
  }
  if (!s.ok()) {
    // INTERNAL: its queue pairs could not be made or connected to ours (VerbsTransport::Accept),
    // which a later dial will not change; anything else (a crossing dial, a daemon not up yet) may.
    const Code code = s.error_code() == grpc::StatusCode::INTERNAL ? Code::kSystem : Code::kRefused;
    return Status(code, "node " + node + " at " + address_of_(node) + ": " + s.error_message());
  }
  DialAnswer answer;
  answer.incarnation = reply.incarnation();
  answer.dials_started = reply.dials_started();
  for (const auto& e : reply.endpoints()) {
    auto ep = EndpointFromProto(e);
    if (!ep.ok()) return Status(Code::kProtocol, "node " + node + ": " + ep.status().message());
    answer.endpoints.push_back(ep.value());
  }
  answer.datagram = reply.datagram();
  for (const auto& e : reply.datagram_endpoints()) {
    auto ep = EndpointFromProto(e);
    if (!ep.ok()) return Status(Code::kProtocol, "node " + node + ": " + ep.status().message());
    answer.datagram_endpoints.push_back(ep.value());
  }
  return answer;
}

}  // namespace ohio
