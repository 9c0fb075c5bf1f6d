// Every control message as the daemon decodes and checks it (ParseControlRequest, CheckHello,
// ValidateJoin, then the group's shape as the registry builds it), and every reply as the client
// library decodes it. What parses must serialize and parse back to the same bytes; a join that
// passes validation must describe a group this daemon is part of.
#include <cstdint>
#include <set>
#include <string>

#include <google/protobuf/stubs/logging.h>

#include "common/version.h"
#include "daemon/control/control_request.h"
#include "daemon/ops/config.h"
#include "proto/control.pb.h"
#include "shm/plan/exchange_plan.h"
#include "shm/plan/group_shape.h"
#include "shm/plan/staging.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

// The daemon the requests are sent to. A low rank limit lets short inputs reach it.
ohio::DaemonConfig FuzzedDaemon() {
  ohio::DaemonConfig c;
  c.node_name = "node0";
  c.max_group_ranks = 64;
  return c;
}

template <typename Message>
void CheckReserializes(const Message& m) {
  const std::string once = m.SerializeAsString();
  Message again;
  FUZZ_CHECK(again.ParseFromString(once), "a parsed message's serialization parses");
  FUZZ_CHECK(again.SerializeAsString() == once, "serialize -> parse -> serialize is stable");
}

void CheckJoin(const ohio::control::JoinGroup& join, const ohio::DaemonConfig& config) {
  auto spec = ohio::ValidateJoin(join, config);
  if (!spec.ok()) {
    FUZZ_CHECK(spec.status().code() == ohio::Code::kInvalidArgument, "a refused join is an invalid argument");
    FUZZ_CHECK(!spec.status().message().empty(), "a refused join says why");
    return;
  }
  FUZZ_CHECK(join.key().size() == 16, "the key is 16 bytes");
  FUZZ_CHECK(std::string(spec->key.begin(), spec->key.end()) == join.key(), "the spec keeps the key");
  FUZZ_CHECK(join.size() >= 1 && join.size() <= config.max_group_ranks, "the size is within max_group_ranks");
  FUZZ_CHECK(join.rank() < join.size(), "the rank is inside the group");
  FUZZ_CHECK(spec->rank_node.size() == join.size(), "one node index per rank");
  FUZZ_CHECK(spec->node < spec->node_names.size(), "this node is among the group's nodes");
  FUZZ_CHECK(spec->node_names[spec->node] == config.node_name, "the spec's node is this daemon");
  FUZZ_CHECK(spec->rank_node[join.rank()] == spec->node, "the joining rank is on this node");
  FUZZ_CHECK(std::set<std::string>(spec->node_names.begin(), spec->node_names.end()).size() == spec->node_names.size(),
             "node names are distinct");
  FUZZ_CHECK(ohio::ParseNodeLevelDesign(ohio::NodeLevelDesignName(spec->design)) == spec->design,
             "the algorithm is one the daemon names");

  // What the registry does next with a new group.
  auto shape = ohio::GroupShape::Make(static_cast<uint32_t>(spec->node_names.size()), spec->rank_node);
  if (!shape.ok()) {
    FUZZ_CHECK(shape.status().code() == ohio::Code::kInvalidArgument, "a shape is refused as an invalid argument");
    return;
  }
  FUZZ_CHECK(shape->size() == join.size() && shape->nodes() == spec->node_names.size(), "the shape's dimensions");
  uint32_t ranks = 0;
  for (uint32_t n = 0; n < shape->nodes(); ++n) {
    FUZZ_CHECK(shape->ppn(n) >= 1 && shape->ppn(n) <= shape->max_ppn(), "every node holds 1..max_ppn ranks");
    FUZZ_CHECK(shape->ranks_before(n) == ranks, "ranks_before counts the ranks of the nodes before");
    for (uint32_t l = 0; l < shape->ppn(n); ++l) {
      const uint32_t g = shape->rank_at(n, l);
      FUZZ_CHECK(g < shape->size() && shape->node_of(g) == n && shape->local_index(g) == l,
                 "rank_at, node_of and local_index agree");
    }
    ranks += shape->ppn(n);
  }
  FUZZ_CHECK(ranks == shape->size(), "every rank is on exactly one node");
  const uint64_t ssb = ohio::MinSsbBytes(shape.value());
  FUZZ_CHECK(ohio::MinLocalSsbBytes(shape.value()) >= ssb, "a local SSB holds at least one half");
  (void)ohio::MinSrbBytes(shape.value(), spec->design);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // A string field with invalid UTF-8 fails the parse (checked below) and libprotobuf logs a
  // line for it: on every such input, which would bury the fuzzer's own output.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ohio::DaemonConfig config = FuzzedDaemon();
  const std::string payload(reinterpret_cast<const char*>(data), size);

  auto request = ohio::ParseControlRequest(payload);
  if (request.ok()) {
    const ohio::control::ClientMessage& msg = request.value();
    FUZZ_CHECK(msg.body_case() != ohio::control::ClientMessage::BODY_NOT_SET, "a request has a body");
    CheckReserializes(msg);
    if (msg.has_hello()) {
      const ohio::Status s = ohio::CheckHello(msg.hello());
      FUZZ_CHECK(s.ok() == (msg.hello().protocol_version() == ohio::kControlProtocolVersion),
                 "a hello passes exactly when its protocol is the daemon's");
      FUZZ_CHECK(s.ok() || s.message().find(std::to_string(msg.hello().protocol_version())) != std::string::npos,
                 "a version refusal names the client's version");
    }
    if (msg.has_join()) CheckJoin(msg.join(), config);
  } else {
    FUZZ_CHECK(request.status().code() == ohio::Code::kProtocol, "an unparseable request is a protocol error");
  }

  // The client library's side of the channel: the daemon's replies.
  ohio::control::DaemonMessage reply;
  if (reply.ParseFromString(payload)) CheckReserializes(reply);
  return 0;
}
