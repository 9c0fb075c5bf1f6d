// K real ohiods on this machine acting as K nodes ("n0".."nK-1") over loopback: each with
// its own control and admin sockets, peer and data ports, and a peers table naming the
// others. Ports are free ones found when the cluster is made (again once, at Start, if another
// process took one first) and kept across restarts, so a node can be killed and brought back
// as the same node.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "proto/admin.pb.h"
#include "tests/harness/daemon_fixture.h"
#include "tests/harness/process.h"

namespace ohio::testing {

class Cluster {
 public:
  Cluster(const TempDir& dir, uint32_t nodes, std::vector<std::string> extra_flags = {});

  // Adds flags to node i's own (later flags win), before it starts: e.g. a node of another
  // cluster among this one's.
  void AddFlags(uint32_t i, const std::vector<std::string>& flags);

  // Every node; false if one did not come up. A node that could not listen because another
  // process took one of its ports meanwhile is retried once, with the whole cluster on fresh
  // ports (peer_port and data_port say which).
  bool Start();
  bool StartNode(uint32_t i);  // (re)starts node i as the same node
  Daemon& node(uint32_t i) { return *daemons_[i]; }
  uint32_t size() const { return static_cast<uint32_t>(daemons_.size()); }
  const std::string& name(uint32_t i) const { return names_[i]; }
  int peer_port(uint32_t i) const { return ports_[2 * i]; }  // gRPC peer service
  int data_port(uint32_t i) const { return ports_[2 * i + 1]; }
  std::string Logs() const;

 private:
  const TempDir& dir_;
  std::vector<std::string> names_;
  // (Re)makes every node's Daemon from the ports and flags.
  void MakeDaemons();

  std::vector<int> ports_;  // peer, data of node 0, then of node 1, ...
  std::vector<std::string> extra_flags_;         // every node's
  std::vector<std::vector<std::string>> added_;  // per node (AddFlags)
  std::vector<std::unique_ptr<Daemon>> daemons_;
};

// The daemon's admin Status over its admin socket; ok=false with the reason in `error`.
struct StatusQuery {
  bool ok = false;
  std::string error;
  admin::StatusReply reply;
};
StatusQuery QueryStatus(const std::string& admin_socket);
// The daemon's admin Counters (empty if it does not answer within 10 s).
admin::CountersReply QueryCounters(const std::string& admin_socket);
// Its count of calls of `function` handed to the MPI library for `reason`; -1 if absent.
long HandedBack(const admin::CountersReply& c, const std::string& function, const std::string& reason);
// The daemon's admin ListPeers (empty if it does not answer within 10 s).
admin::ListPeersReply QueryPeers(const std::string& admin_socket);

// Every node's control socket and name, in node order: what a RankJob across the cluster needs.
std::vector<std::string> ControlSockets(Cluster& c);
std::vector<std::string> NodeNames(Cluster& c);
// Placement of `ppn` consecutive ranks on each of `nodes` nodes: rank g on node g / ppn.
std::vector<uint32_t> ConsecutivePlacement(uint32_t nodes, uint32_t ppn);

// Free TCP ports on 127.0.0.1, found by binding to port 0.
std::vector<int> FreePorts(int count);

}  // namespace ohio::testing
