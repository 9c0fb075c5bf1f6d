#include "daemon/transport/tcp/tcp_frame.h"

#include <string>

#include "common/little_endian.h"
#include "daemon/transport/transport.h"

namespace ohio {

void TcpFrameHeader::Encode(char* out) const {
  PutLittleEndian<uint32_t>(out, kMagic | type);
  PutLittleEndian<uint32_t>(out + 4, imm);
  PutLittleEndian<uint64_t>(out + 8, key);
  PutLittleEndian<uint64_t>(out + 16, offset);
  PutLittleEndian<uint64_t>(out + 24, bytes);
}

Result<TcpFrameHeader> TcpFrameHeader::Decode(const char* in, bool peer_named) {
  const uint32_t word = GetLittleEndian<uint32_t>(in);
  if ((word & 0xffff0000) != kMagic) return Status(Code::kProtocol, "not an ohio peer, or a version mismatch");
  TcpFrameHeader h;
  h.type = word & 0xffff;
  h.imm = GetLittleEndian<uint32_t>(in + 4);
  h.key = GetLittleEndian<uint64_t>(in + 8);
  h.offset = GetLittleEndian<uint64_t>(in + 16);
  h.bytes = GetLittleEndian<uint64_t>(in + 24);
  switch (h.type) {
    case kHello:
      if (h.bytes < 1 || h.bytes > kMaxHello) {
        return Status(Code::kProtocol, "a hello of " + std::to_string(h.bytes) + " bytes (1 to " +
                                           std::to_string(kMaxHello) + ")");
      }
      return h;
    case kMessage:
      if (h.bytes > kMaxTransportMessage) {
        return Status(Code::kProtocol, "a message of " + std::to_string(h.bytes) + " bytes (at most " +
                                           std::to_string(kMaxTransportMessage) + ")");
      }
      break;
    case kPut:
      break;
    default:
      return Status(Code::kProtocol, "unknown frame type " + std::to_string(h.type) + " (a version mismatch?)");
  }
  if (!peer_named) return Status(Code::kProtocol, "a frame before the peer's hello");
  return h;
}

uint32_t TcpFrameHeader::RawType(const char* in) { return GetLittleEndian<uint32_t>(in) & 0xffff; }

}  // namespace ohio
