#include "daemon/ops/cluster_nodes.h"

#include <arpa/inet.h>
#include <netdb.h>

namespace ohio {

ClusterNodes::ClusterNodes(const DaemonConfig& config) : config_(config) {
  for (const std::string& entry : config.peers) {
    const auto eq = entry.find('=');
    table_[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  auto hosts = HostPatterns::Parse(config.peer_hosts);
  if (hosts.ok()) hosts_ = std::move(hosts).value();
  auto networks = AddressRanges::Parse(config.peer_networks);
  if (networks.ok()) networks_ = std::move(networks).value();
}

bool ClusterNodes::Known(const std::string& node) const {
  return node == config_.node_name || table_.count(node) != 0 || hosts_.Matches(node);
}

Status ClusterNodes::CheckKnown(const std::vector<std::string>& nodes) const {
  std::string unknown;
  size_t count = 0;
  for (const std::string& node : nodes) {
    if (Known(node)) continue;
    // A few names say enough; a user's list of thousands need not come back whole.
    if (++count <= 3) unknown += (unknown.empty() ? "'" : ", '") + node.substr(0, HostPatterns::kLongestHostName) + "'";
  }
  if (count == 0) return Status::Ok();
  if (count > 3) unknown += " and " + std::to_string(count - 3) + " more";
  return Status(Code::kRefused,
                "the group names node(s) " + unknown + " that ohiod on " + config_.node_name +
                    " does not know as this cluster's nodes (the admin lists them in its peer table or admits "
                    "them with peer-hosts); the group is refused and no node was called");
}

std::string ClusterNodes::Address(const std::string& node) const {
  auto it = table_.find(node);
  if (it != table_.end()) return it->second;
  return node + ":" + std::to_string(config_.peer_port);
}

Result<std::string> ClusterNodes::Target(const std::string& node) const {
  auto it = table_.find(node);
  if (it != table_.end()) return it->second;
  if (!hosts_.Matches(node)) {
    return Status(Code::kRefused, "node '" + node + "' is not one of this cluster's nodes (peer, peer-hosts)");
  }
  const std::string port = std::to_string(config_.peer_port);
  if (networks_.empty()) return node + ":" + port;
  // Resolved here, and the address checked is the one dialled: gRPC is not left to resolve
  // the name again, to an answer nobody checked.
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int err = getaddrinfo(node.c_str(), port.c_str(), &hints, &found);
  if (err != 0) {
    return Status(Code::kTimeout, "node " + node + ": DNS gives no address (" + gai_strerror(err) + ")");
  }
  std::string outside;
  std::string target;
  for (addrinfo* a = found; a != nullptr && target.empty(); a = a->ai_next) {
    if (a->ai_family != AF_INET && a->ai_family != AF_INET6) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw = a->ai_family == AF_INET
                          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr)
                          : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
    inet_ntop(a->ai_family, raw, text, sizeof(text));
    if (networks_.Contains(a->ai_addr)) {
      target = a->ai_family == AF_INET ? "ipv4:" + std::string(text) + ":" + port
                                       : "ipv6:[" + std::string(text) + "]:" + port;
    } else if (outside.find(text) == std::string::npos) {
      outside += (outside.empty() ? "" : ", ") + std::string(text);
    }
  }
  freeaddrinfo(found);
  if (!target.empty()) return target;
  return Status(Code::kRefused, "node " + node + " resolves to " + outside + ", outside peer-networks = " +
                                    config_.peer_networks + ": not one of this cluster's nodes");
}

}  // namespace ohio
