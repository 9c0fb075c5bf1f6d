// Which nodes are this cluster's, as its configuration says, and where their daemons' peer
// services are: ohiod calls those and no other address, whatever node names a group gives (a
// user names the nodes of a group; a daemon runs as root). A node is known if the peers table
// lists it (peer = NAME=HOST:PORT, at that address) or peer-hosts admits its name (found by
// DNS on this node's peer-port, and only at an address inside peer-networks when that is set).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/ops/address_ranges.h"
#include "daemon/ops/config.h"
#include "daemon/ops/host_pattern.h"

namespace ohio {

class ClusterNodes {
 public:
  // The settings were checked when they were loaded (LoadDaemonConfig).
  explicit ClusterNodes(const DaemonConfig& config);

  // Ok, or kRefused naming the nodes of `nodes` (a group's, this node's own name aside) that
  // are not this cluster's, and how an admin makes a node known. No DNS: names only.
  Status CheckKnown(const std::vector<std::string>& nodes) const;
  bool Known(const std::string& node) const;

  // The gRPC target of a known node's peer service: its table entry as written, or for a node
  // peer-hosts admits, its name on peer-port, resolved here (blocking) and checked against
  // peer-networks when that is set. kRefused for a node not known or resolved outside the
  // networks (final); kTimeout when DNS has no answer now (worth asking again).
  Result<std::string> Target(const std::string& node) const;

  // Where `node`'s peer service is, as configured (no DNS): for people to read.
  std::string Address(const std::string& node) const;

 private:
  const DaemonConfig& config_;
  std::map<std::string, std::string> table_;  // node name -> host:port
  HostPatterns hosts_;
  AddressRanges networks_;
};

}  // namespace ohio
