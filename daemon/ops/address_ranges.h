// The address ranges the DNS answers for peer nodes must fall in (config key peer-networks): a
// comma-separated list of IPv4 or IPv6 networks in CIDR notation ("10.1.0.0/16,fd00::/8"); a
// bare address is a network of that one address. A node name DNS resolves outside them is not
// one of this cluster's nodes, whatever a group says.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ohio {

class AddressRanges {
 public:
  // kInvalidArgument naming the faulty network and what is wrong with it.
  static Result<AddressRanges> Parse(const std::string& text);

  bool empty() const { return networks_.empty(); }
  // Whether `address` (AF_INET or AF_INET6) lies in one of the networks.
  bool Contains(const sockaddr* address) const;

 private:
  struct Network {
    int family = AF_INET;
    std::array<uint8_t, 16> bytes{};  // the first 4 for IPv4
    uint32_t prefix = 0;              // bits
  };
  std::vector<Network> networks_;
};

}  // namespace ohio
