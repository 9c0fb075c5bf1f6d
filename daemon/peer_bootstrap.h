// Introduces each multi-node group to the other nodes' daemons: a thread that, for every new
// group, asks every other node of the group over the peer gRPC service for its tag and SRB
// (retrying while none of that node's ranks has joined yet), connects the data transport, and
// hands what it learnt to the progress engine. Peer daemons are found in the configured peers
// table, else by DNS on the default peer port. Every call carries a MUNGE credential for its
// method and the node called (auth = munge); a node that refuses this one fails the group at
// once with its reason, it is not retried.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "daemon/config.h"
#include "daemon/exchange.h"
#include "daemon/group.h"
#include "daemon/peer_auth.h"
#include "daemon/transport/transport.h"

namespace ohio {

class PeerBootstrap {
 public:
  using OnPeer = std::function<void(std::shared_ptr<Group>, uint32_t node, PeerGroupInfo)>;
  using OnFailure = std::function<void(std::shared_ptr<Group>, Status)>;

  PeerBootstrap(const DaemonConfig& config, const PeerAuth* auth, Transport* transport, OnPeer on_peer,
                OnFailure on_failure);
  ~PeerBootstrap();

  void Open(std::shared_ptr<Group> group);

  // The peer service address of `node` (host:port): the peers table, else the name itself.
  std::string PeerAddress(const std::string& node) const;

 private:
  struct Job {
    std::shared_ptr<Group> group;
    std::vector<bool> done;
    std::chrono::steady_clock::time_point deadline;
  };
  void Run();
  // One attempt for one node: true once it answered (success or a final error).
  bool TryOpen(Job& job, uint32_t node);

  const DaemonConfig& config_;
  const PeerAuth* auth_;
  Transport* transport_;
  OnPeer on_peer_;
  OnFailure on_failure_;
  std::map<std::string, std::string> peers_;  // node name -> host:port

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::thread thread_;

  struct Channel;
  std::map<std::string, std::shared_ptr<Channel>> channels_;  // bootstrap thread only
};

}  // namespace ohio
