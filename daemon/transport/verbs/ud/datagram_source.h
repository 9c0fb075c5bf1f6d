// Which peer sent a datagram that arrived on a UD queue pair. A datagram names no sender of its
// own: the completion reports the sending queue pair's number (src_qp) and, on InfiniBand, its
// port's LID (slid), and when it says the datagram came with a global route header
// (IBV_WC_GRH) the 40 bytes before it hold that header, whose source address is the sender's
// GID. Without the flag those bytes are whatever the slot held before, so they are not read.
// Pure: decided from what it is told, so that it is tested without a device
// (tests/unit/transport/datagram_source_test.cc).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>

#include "daemon/transport/transport.h"

namespace ohio {

// A peer's datagram queue pair as this node addresses it, kept by its queue pair number.
struct KnownDatagramSender {
  std::array<uint8_t, 16> gid{};
  uint16_t lid = 0;  // 0 where the fabric has none (RoCE)
  PeerId peer = 0;
};
using DatagramSenders = std::multimap<uint32_t, KnownDatagramSender>;

// What the completion of a receive says of where the datagram came from.
struct ReceivedFrom {
  uint32_t src_qp = 0;
  uint16_t slid = 0;
  bool has_grh = false;           // wc_flags & IBV_WC_GRH
  const uint8_t* grh = nullptr;   // the 40 bytes before the datagram; read only when has_grh
};

// The peer that sent it, or why it is refused (a peer of ours is never guessed at).
struct DatagramSource {
  std::optional<PeerId> peer;
  const char* refused = nullptr;
};

// With a route header, the peer whose queue pair has src_qp and whose GID is the header's source
// (an IPv6 header or an InfiniBand GRH: the GID at byte 8; RoCE v2 over IPv4: the IPv4 header in
// the last 20 bytes, its source at byte 32, for a GID that maps an IPv4 address). Without one,
// the peer whose queue pair has src_qp and whose LID is slid, if exactly one has (never on RoCE,
// where every datagram carries a header and no port has a LID).
DatagramSource IdentifyDatagramSource(const DatagramSenders& senders, const ReceivedFrom& from);

}  // namespace ohio
