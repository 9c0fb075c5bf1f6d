// What one end of a queue pair tells the other so that the two can be connected (RC) or
// addressed (UD): GID, LID, queue pair number, first packet (or datagram) number and MTU. It
// travels in a dial through the peer gRPC service, and in a move between the two services over
// the old one (move_notice.h).
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <string>

namespace ohio {

struct QpEndpoint {
  std::array<uint8_t, 16> gid{};
  uint16_t lid = 0;
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint32_t mtu = IBV_MTU_1024;  // enum ibv_mtu
  std::string rail;             // e.g. "rxe0:1", for logs and Status
};

// A GID as people read it: "::ffff:10.77.0.1" (RoCE over IPv4), "fe80::..." (InfiniBand).
std::string GidText(const std::array<uint8_t, 16>& gid);

}  // namespace ohio
