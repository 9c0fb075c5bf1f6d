// The calling side of ConnectQueuePairs: how the verbs transport reaches another node's
// daemon to connect queue pairs, over the same peer gRPC service as the group bootstrap, with a
// MUNGE credential like every peer call.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/peers/peer_auth.h"
#include "daemon/transport/verbs/verbs_transport.h"
#include "proto/peer.grpc.pb.h"

namespace ohio {

class QueuePairDialer {
 public:
  // `address_of` maps a node name to its peer service (host:port).
  QueuePairDialer(std::string self, const PeerAuth* auth, std::function<std::string(const std::string&)> address_of);

  Result<DialAnswer> Dial(const std::string& peer, const DialOffer& offer);

 private:
  const std::string self_;
  const PeerAuth* auth_;
  const std::function<std::string(const std::string&)> address_of_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<peer::Peer::Stub>> stubs_;
};

}  // namespace ohio
