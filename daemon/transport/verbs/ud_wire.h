// What travels in one UD datagram between two daemons: a peer that is not in the pool of RC
// queue pairs is reached through the rail's one UD queue pair, and a put to it is cut into
// datagrams of at most the path's MTU, each carrying where its bytes go, since datagrams arrive
// in any order, twice, or not at all. A 56-byte little-endian header, then the payload:
//   type | seq | ack | imm | sack | key | start | total | put | at
// kData  payload bytes `at` to `at` + payload of put `put`, which writes `total` bytes (less
//        than 4 GiB) at offset `start` of region `key` and raises `imm` at the receiver once
//        every byte has landed (daemon/transport/verbs/ud/ud_put_fragments.h); numbered `seq` in
//        the sender's stream to this peer (daemon/transport/verbs/ud/ud_reliability.h)
// kAck   no payload, no seq: the sender of the ack holds every datagram of the other's stream
//        before `ack`, and those at ack + 1 + i for each bit i set in `sack`
// kMessage   a small exchange message (the payload), numbered `seq` in the stream like kData
// kKeepalive no payload, numbered: sent while groups wait, so that a peer that stopped
//            answering shows as datagrams nobody acknowledges
// kMoving    the pair moves to RC: payload = a MoveNotice (move_notice.h), numbered like kData,
//            the last datagram of the sender's stream
// A kData datagram carries the same acknowledgement of the reverse stream, so a busy pair needs
// no separate acks.
#pragma once

#include <cstdint>
#include <optional>

#include "daemon/transport/verbs/verbs_wire.h"

namespace ohio {

struct UdWireHeader {
  enum Type : uint8_t { kData = 1, kAck = 2, kMessage = 3, kKeepalive = 4, kMoving = 5 };
  static constexpr size_t kBytes = 56;

  uint8_t type = 0;
  uint32_t seq = 0;
  uint32_t ack = 0;
  uint32_t imm = 0;
  uint64_t sack = 0;
  uint64_t key = 0;
  uint64_t start = 0;
  uint64_t total = 0;
  uint32_t put = 0;
  uint32_t at = 0;

  void Encode(uint8_t* out) const {
    WirePut<uint32_t>(out, type);  // the 3 bytes after the type are zero
    WirePut<uint32_t>(out + 4, seq);
    WirePut<uint32_t>(out + 8, ack);
    WirePut<uint32_t>(out + 12, imm);
    WirePut<uint64_t>(out + 16, sack);
    WirePut<uint64_t>(out + 24, key);
    WirePut<uint64_t>(out + 32, start);
    WirePut<uint64_t>(out + 40, total);
    WirePut<uint32_t>(out + 48, put);
    WirePut<uint32_t>(out + 52, at);
  }

  // The header of a datagram of `bytes` bytes (header and payload), or nullopt: too short, an
  // unknown type, an ack or keepalive with a payload, or data of a put of 4 GiB or more, or whose payload
  // would reach past its put's end.
  static std::optional<UdWireHeader> Decode(const uint8_t* in, size_t bytes) {
    if (bytes < kBytes) return std::nullopt;
    UdWireHeader h;
    const uint32_t word = WireGet<uint32_t>(in);
    if (word < kData || word > kMoving) return std::nullopt;
    h.type = static_cast<uint8_t>(word);
    h.seq = WireGet<uint32_t>(in + 4);
    h.ack = WireGet<uint32_t>(in + 8);
    h.imm = WireGet<uint32_t>(in + 12);
    h.sack = WireGet<uint64_t>(in + 16);
    h.key = WireGet<uint64_t>(in + 24);
    h.start = WireGet<uint64_t>(in + 32);
    h.total = WireGet<uint64_t>(in + 40);
    h.put = WireGet<uint32_t>(in + 48);
    h.at = WireGet<uint32_t>(in + 52);
    const uint64_t payload = bytes - kBytes;
    if ((h.type == kAck || h.type == kKeepalive) && payload != 0) return std::nullopt;
    if (h.type == kData && (h.total > UINT32_MAX || h.at > h.total || payload > h.total - h.at)) return std::nullopt;
    return h;
  }
};

}  // namespace ohio
