#include "daemon/transport/verbs/ud/datagram_source.h"

#include <cstring>

namespace ohio {

DatagramSource IdentifyDatagramSource(const DatagramSenders& senders, const ReceivedFrom& from) {
  static constexpr uint8_t kV4Mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  const auto [first, last] = senders.equal_range(from.src_qp);
  if (first == last) return {std::nullopt, "no peer's datagram queue pair has its number"};
  if (from.has_grh) {
    for (auto it = first; it != last; ++it) {
      const std::array<uint8_t, 16>& gid = it->second.gid;
      const bool v4 = std::memcmp(gid.data(), kV4Mapped, sizeof(kV4Mapped)) == 0;
      if (v4 ? std::memcmp(from.grh + 32, gid.data() + 12, 4) == 0 : std::memcmp(from.grh + 8, gid.data(), 16) == 0) {
        return {it->second.peer, nullptr};
      }
    }
    return {std::nullopt, "its source address is not that of the peer with its queue pair number"};
  }
  if (from.slid == 0) return {std::nullopt, "it came with no route header and no source LID"};
  std::optional<PeerId> match;
  for (auto it = first; it != last; ++it) {
    if (it->second.lid != from.slid) continue;
    // Two peers behind one LID with the same queue pair number cannot be told apart.
    if (match && *match != it->second.peer) {
      return {std::nullopt, "two peers have its source LID and queue pair number"};
    }
    match = it->second.peer;
  }
  if (!match) return {std::nullopt, "it came with no route header, and its source LID is not that of the peer with its "
                                    "queue pair number"};
  return {match, nullptr};
}

}  // namespace ohio
