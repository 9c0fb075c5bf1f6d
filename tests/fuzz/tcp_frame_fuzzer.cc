// What a peer daemon may send on a TCP data connection, read as the transport reads it: frame
// headers one after the other (each followed by its payload), with the peer unnamed until its
// hello. A header accepted re-encodes to exactly its 32 bytes and keeps the limits the
// transport's buffers rely on; a put accepted into a region lies wholly inside it.
#include <cstdint>
#include <cstring>

#include "daemon/transport/tcp/tcp_frame.h"
#include "daemon/transport/transport.h"
#include "tests/fuzz/fuzz_check.h"

using ohio::TcpFrameHeader;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  bool named = false;
  size_t at = 0;
  while (size - at >= TcpFrameHeader::kBytes) {
    const char* in = reinterpret_cast<const char*>(data + at);
    auto h = TcpFrameHeader::Decode(in, named);
    if (!h.ok()) {
      FUZZ_CHECK(h.status().code() == ohio::Code::kProtocol, "a refused header is a protocol error");
      break;  // the transport closes the connection
    }
    char again[TcpFrameHeader::kBytes];
    h->Encode(again);
    FUZZ_CHECK(std::memcmp(again, in, sizeof(again)) == 0, "an accepted header re-encodes to its bytes");
    switch (h->type) {
      case TcpFrameHeader::kHello:
        FUZZ_CHECK(h->bytes >= 1 && h->bytes <= TcpFrameHeader::kMaxHello, "a hello fits the name buffer");
        break;
      case TcpFrameHeader::kMessage:
        FUZZ_CHECK(named, "a message comes after the hello");
        FUZZ_CHECK(h->bytes <= ohio::kMaxTransportMessage, "a message fits the message buffer");
        break;
      case TcpFrameHeader::kPut: {
        FUZZ_CHECK(named, "a put comes after the hello");
        // Regions of the sizes a segment has: small, a page, and the largest offsets.
        for (uint64_t region : {uint64_t{0}, uint64_t{4096}, uint64_t{1} << 30, ~uint64_t{0}}) {
          const unsigned __int128 end = static_cast<unsigned __int128>(h->offset) + h->bytes;
          FUZZ_CHECK(h->FitsRegion(region) == (end <= region), "FitsRegion is offset + bytes <= region, without overflow");
        }
        break;
      }
      default:
        FUZZ_CHECK(false, "only known frame types are accepted");
    }
    at += TcpFrameHeader::kBytes;
    // The payload follows; a hello names the peer (a second hello closes the connection).
    if (h->type == TcpFrameHeader::kHello) {
      if (named) break;
      named = true;
    }
    at += static_cast<size_t>(std::min<uint64_t>(h->bytes, size - at));
  }
  return 0;
}
