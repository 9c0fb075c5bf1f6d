// What two daemons say to move the pair of them between the verbs transport's two services (an
// RC queue pair of the pool, or the rail's shared UD queue pair) while groups keep running. It
// is the last thing either end sends on the old service, so the receiver knows that everything
// the sender put there before it has arrived; it carries the new service's endpoints:
//   one RC queue pair per rail, created and waiting to be connected (to RC), or
//   the datagram queue pair, with the number the sender's new stream starts at (to UD).
// The node that starts the move sends a notice; the other answers with one (`reply`), or
// refuses a move to RC when its own pool is full (`refused`, no endpoints). Over RC a notice
// goes on every rail, each behind what was posted on that rail.
// Little-endian: flags (1 byte: to_rc, reply, refused), count (1 byte), then per endpoint:
//   gid (16) | lid (2) | qpn (4) | psn (4) | mtu (1) | rail name length (1) | rail name
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/transport/verbs/qp_endpoint.h"
#include "daemon/transport/verbs/verbs_wire.h"

namespace ohio {

struct MoveNotice {
  static constexpr size_t kMaxEndpoints = 16;
  static constexpr size_t kEndpointFixedBytes = 28;

  bool to_rc = false;
  bool reply = false;
  bool refused = false;
  std::vector<QpEndpoint> endpoints;

  std::string Encode() const {
    std::string out;
    out.push_back(static_cast<char>((to_rc ? 1 : 0) | (reply ? 2 : 0) | (refused ? 4 : 0)));
    out.push_back(static_cast<char>(endpoints.size()));
    for (const QpEndpoint& e : endpoints) {
      uint8_t fixed[kEndpointFixedBytes] = {};
      for (size_t i = 0; i < 16; ++i) fixed[i] = e.gid[i];
      WirePut<uint16_t>(fixed + 16, e.lid);
      WirePut<uint32_t>(fixed + 18, e.qpn);
      WirePut<uint32_t>(fixed + 22, e.psn);
      fixed[26] = static_cast<uint8_t>(e.mtu);
      const std::string name = e.rail.substr(0, 255);
      fixed[27] = static_cast<uint8_t>(name.size());
      out.append(reinterpret_cast<const char*>(fixed), sizeof(fixed));
      out += name;
    }
    return out;
  }

  // Nullopt: truncated, unknown flags, too many endpoints, bytes left over, or a refusal that
  // carries endpoints (or a notice that should carry some and does not).
  static std::optional<MoveNotice> Decode(const uint8_t* in, size_t bytes) {
    if (bytes < 2 || (in[0] & ~7u) != 0) return std::nullopt;
    MoveNotice n;
    n.to_rc = (in[0] & 1) != 0;
    n.reply = (in[0] & 2) != 0;
    n.refused = (in[0] & 4) != 0;
    const size_t count = in[1];
    if (count > kMaxEndpoints || n.refused != (count == 0)) return std::nullopt;
    if (n.refused && (!n.to_rc || !n.reply)) return std::nullopt;  // only a move to RC is refused, by the answer
    size_t at = 2;
    for (size_t k = 0; k < count; ++k) {
      if (bytes - at < kEndpointFixedBytes) return std::nullopt;
      const uint8_t* e = in + at;
      QpEndpoint ep;
      for (size_t i = 0; i < 16; ++i) ep.gid[i] = e[i];
      ep.lid = WireGet<uint16_t>(e + 16);
      ep.qpn = WireGet<uint32_t>(e + 18);
      ep.psn = WireGet<uint32_t>(e + 22);
      ep.mtu = e[26];
      const size_t name = e[27];
      at += kEndpointFixedBytes;
      if (bytes - at < name) return std::nullopt;
      ep.rail.assign(reinterpret_cast<const char*>(in + at), name);
      at += name;
      n.endpoints.push_back(std::move(ep));
    }
    if (at != bytes) return std::nullopt;
    return n;
  }
};

}  // namespace ohio
