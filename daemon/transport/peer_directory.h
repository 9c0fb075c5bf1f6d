// The node names a transport has been told about, each given a small PeerId once and for the
// daemon's life, so that the per-call path (Put, Send, events) indexes arrays instead of
// comparing strings. Any thread: names are added from the bootstrap and the engine alike.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/transport/transport.h"

namespace ohio {

class PeerDirectory {
 public:
  PeerId For(const std::string& node) {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, added] = ids_.emplace(node, static_cast<PeerId>(names_.size()));
    if (added) names_.push_back(node);
    return it->second;
  }

  // "" for an id never handed out.
  std::string Name(PeerId peer) const {
    std::lock_guard<std::mutex> lock(mu_);
    return peer < names_.size() ? names_[peer] : std::string();
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, PeerId> ids_;
  std::vector<std::string> names_;
};

}  // namespace ohio
