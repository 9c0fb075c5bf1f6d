#include "daemon/control/control_request.h"

#include <algorithm>
#include <set>

#include "common/version.h"
#include "shm/tables/internode_table_text.h"

namespace ohio {

Result<control::ClientMessage> ParseControlRequest(const std::string& payload) {
  control::ClientMessage msg;
  if (!msg.ParseFromString(payload) || msg.body_case() == control::ClientMessage::BODY_NOT_SET) {
    return Status(Code::kProtocol, "not a control message ohiod understands");
  }
  return msg;
}

Status CheckHello(const control::Hello& hello) {
  if (hello.protocol_version() == kControlProtocolVersion) return Status::Ok();
  return Status(Code::kProtocol, "client speaks control protocol " + std::to_string(hello.protocol_version()) +
                                     ", ohiod " + kVersion + " speaks " + std::to_string(kControlProtocolVersion));
}

Result<GroupSpec> ValidateJoin(const control::JoinGroup& join, const DaemonConfig& config) {
  auto invalid = [](const std::string& m) { return Status(Code::kInvalidArgument, m); };
  if (join.key().size() != 16) return invalid("the group key must be 16 bytes, got " + std::to_string(join.key().size()));
  if (join.size() == 0) return invalid("the group size must be at least 1");
  if (join.size() > config.max_group_ranks) {
    return invalid("a group of " + std::to_string(join.size()) + " ranks exceeds max_group_ranks = " +
                   std::to_string(config.max_group_ranks));
  }
  if (join.rank() >= join.size()) {
    return invalid("rank " + std::to_string(join.rank()) + " is outside a group of " + std::to_string(join.size()));
  }
  if (static_cast<uint32_t>(join.rank_node_size()) != join.size()) {
    return invalid("rank_node lists " + std::to_string(join.rank_node_size()) + " ranks for a group of " +
                   std::to_string(join.size()));
  }
  if (join.node_names_size() == 0) return invalid("the group names no nodes");
  // Before the names are copied and sorted: every node needs a rank of its own.
  if (static_cast<uint32_t>(join.node_names_size()) > join.size()) {
    return invalid("a group of " + std::to_string(join.size()) + " ranks cannot span " +
                   std::to_string(join.node_names_size()) + " nodes");
  }
  std::set<std::string> names(join.node_names().begin(), join.node_names().end());
  if (names.size() != static_cast<size_t>(join.node_names_size())) return invalid("node_names lists a node twice");
  GroupSpec spec;
  std::copy(join.key().begin(), join.key().end(), spec.key.begin());
  spec.node_names.assign(join.node_names().begin(), join.node_names().end());
  spec.rank_node.assign(join.rank_node().begin(), join.rank_node().end());
  auto me = std::find(spec.node_names.begin(), spec.node_names.end(), config.node_name);
  if (me == spec.node_names.end()) {
    return invalid("this daemon is node '" + config.node_name + "', which is not among the group's nodes");
  }
  spec.node = static_cast<uint32_t>(me - spec.node_names.begin());
  if (join.rank_node(static_cast<int>(join.rank())) != spec.node) {
    return invalid("rank " + std::to_string(join.rank()) + " is placed on node '" +
                   (join.rank_node(static_cast<int>(join.rank())) < spec.node_names.size()
                        ? spec.node_names[join.rank_node(static_cast<int>(join.rank()))]
                        : std::string("?")) +
                   "' but asked the daemon of node '" + config.node_name + "'");
  }
  const std::string algo = join.algorithm().empty() ? config.design : join.algorithm();
  auto parsed = ParseNodeLevelDesign(algo);
  if (!parsed) return invalid("unknown design '" + algo + "' (v1, v2 or v3)");
  spec.design = *parsed;
  if (!join.internode().empty() && join.internode() != "auto") {
    spec.internode = ParseInterNodeAlgorithmName(join.internode());
    if (!spec.internode) return invalid("unknown inter-node algorithm '" + join.internode() + "' (auto, pairwise, hypercube or direct)");
  }
  spec.bytes_per_rank_hint = join.bytes_per_rank_hint();
  if (!join.replaces_key().empty()) {
    if (join.replaces_key().size() != 16) {
      return invalid("replaces_key must be 16 bytes, got " + std::to_string(join.replaces_key().size()));
    }
    if (join.replaces_key() == join.key()) return invalid("a group cannot replace itself");
    GroupKey replaced;
    std::copy(join.replaces_key().begin(), join.replaces_key().end(), replaced.begin());
    spec.replaces = replaced;
  }
  return spec;
}

}  // namespace ohio
