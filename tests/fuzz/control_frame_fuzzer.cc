// The control socket's framing, read both ways the code reads it: the daemon's incremental
// FrameReader, fed in chunks whose sizes the input chooses, and the client's blocking
// ReceiveFrame on a real socket pair. Both must see the same frames, each re-encodes to the
// bytes it came from, and a frame over the limit is refused by both.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/framed_socket.h"
#include "common/little_endian.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

constexpr size_t kMaxBytes = 1024;  // small, so that inputs reach the limit

struct Outcome {
  std::vector<std::string> frames;
  bool too_large = false;
};

std::string Encoded(const std::string& payload) {
  std::string out(ohio::kFrameHeaderBytes, '\0');
  ohio::PutLittleEndian<uint32_t>(out.data(), static_cast<uint32_t>(payload.size()));
  return out + payload;
}

Outcome ReadIncrementally(const uint8_t* data, size_t size, uint8_t chunk_seed) {
  Outcome o;
  ohio::FrameReader reader(kMaxBytes);
  size_t fed = 0, consumed = 0;
  size_t chunk = 1 + chunk_seed % 37;
  while (fed < size && !o.too_large) {
    const size_t n = std::min(chunk, size - fed);
    reader.Append(reinterpret_cast<const char*>(data + fed), n);
    fed += n;
    chunk = 1 + (chunk * 7 + chunk_seed) % 61;
    for (;;) {
      std::string payload;
      const auto next = reader.Take(&payload);
      if (next == ohio::FrameReader::Next::kNeedMore) break;
      if (next == ohio::FrameReader::Next::kTooLarge) {
        FUZZ_CHECK(reader.announced() > kMaxBytes, "a refused frame announces more than the limit");
        FUZZ_CHECK(reader.announced() == ohio::GetLittleEndian<uint32_t>(reinterpret_cast<const char*>(data + consumed)),
                   "announced() is the length at the start of the unread bytes");
        o.too_large = true;
        break;
      }
      FUZZ_CHECK(payload.size() <= kMaxBytes, "a frame taken is within the limit");
      const std::string again = Encoded(payload);
      FUZZ_CHECK(consumed + again.size() <= size && std::memcmp(again.data(), data + consumed, again.size()) == 0,
                 "a frame re-encodes to the bytes it was read from");
      consumed += again.size();
      o.frames.push_back(std::move(payload));
    }
  }
  if (!o.too_large) {
    const size_t left = size - consumed;
    FUZZ_CHECK(reader.empty() == (left == 0), "the reader holds exactly the bytes not yet taken");
    if (left >= ohio::kFrameHeaderBytes) {
      FUZZ_CHECK(left < ohio::kFrameHeaderBytes + reader.announced(), "only an incomplete frame is left");
    }
  }
  return o;
}

Outcome ReadFromSocket(const uint8_t* data, size_t size) {
  Outcome o;
  int sv[2];
  FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
  // Inputs are far smaller than a socket buffer: one write, then the end of the stream.
  FUZZ_CHECK(write(sv[1], data, size) == static_cast<ssize_t>(size), "write to the socket pair");
  shutdown(sv[1], SHUT_WR);
  for (;;) {
    std::string payload;
    std::vector<int> fds;
    const ohio::Status s = ohio::ReceiveFrame(sv[0], kMaxBytes, &payload, &fds);
    FUZZ_CHECK(fds.empty(), "no descriptors were sent");
    if (!s.ok()) {
      o.too_large = s.message().find("exceeds the limit") != std::string::npos;
      FUZZ_CHECK(o.too_large || s.code() == ohio::Code::kDaemonLost, "ReceiveFrame fails only on size or end of stream");
      break;
    }
    o.frames.push_back(std::move(payload));
  }
  close(sv[0]);
  close(sv[1]);
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 65536) return 0;
  const Outcome daemon = ReadIncrementally(data + 1, size - 1, data[0]);
  const Outcome client = ReadFromSocket(data + 1, size - 1);
  FUZZ_CHECK(daemon.frames == client.frames, "daemon and client read the same frames");
  FUZZ_CHECK(daemon.too_large == client.too_large, "daemon and client refuse the same oversized frame");
  return 0;
}
