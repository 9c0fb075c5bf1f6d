// The 32-byte header of every frame between two daemons over TCP, little-endian:
//   type word ("OH" magic in the high half, the type in the low half) | imm | key | offset | bytes
// kHello    payload = the sender's node name, a NUL and its MUNGE credential (1..kMaxHello
//           bytes); the first frame of a connection
// kPut      payload = `bytes` bytes to land at `offset` in the receiver's region `key`; `imm`
//           is raised at the receiver once all of it has landed
// kMessage  payload = a small exchange message (at most kMaxTransportMessage bytes)
// Decoding is apart from the transport's socket loop so that the fuzzer runs the same code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace ohio {

struct TcpFrameHeader {
  enum Type : uint32_t { kHello = 1, kPut = 2, kMessage = 3 };
  static constexpr size_t kBytes = 32;
  static constexpr uint32_t kMagic = 0x4f480000;  // high half of the type word: "OH"
  static constexpr size_t kMaxHello = 2048;  // a node name and a MUNGE credential (~200 bytes)

  uint32_t type = 0;
  uint32_t imm = 0;
  uint64_t key = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;

  void Encode(char* out) const;
  // The header of the next frame on a connection; before the peer has said hello (named), only
  // a hello is accepted. A kProtocol error says what was wrong.
  static Result<TcpFrameHeader> Decode(const char* in, bool peer_named);
  // The type field of a header not yet decoded: a peer that sends anything but a hello first
  // is refused for want of a credential, not for a protocol error.
  static uint32_t RawType(const char* in);
  // Whether a put's payload lies wholly inside a region of `region_bytes` bytes.
  bool FitsRegion(uint64_t region_bytes) const { return offset <= region_bytes && bytes <= region_bytes - offset; }
};

}  // namespace ohio
