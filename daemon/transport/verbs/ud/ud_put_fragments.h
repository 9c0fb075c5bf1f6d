// A put over UD, cut into datagrams and put back together, decided apart from the verbs calls.
// RC writes a put into the peer's registered memory in one work request; UD carries at most
// one MTU per datagram, so the sender cuts the put into pieces of at most `mtu - header` bytes,
// each carrying where it lands (daemon/transport/verbs/ud_wire.h), and the receiver, placing
// each piece where it says in whatever order they come, counts the bytes of each put until all
// have landed, and only then raises the put's immediate as an RC write with immediate would.
// The reliability below (daemon/transport/verbs/ud/ud_reliability.h) delivers each datagram once,
// so a piece is never counted twice.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "common/status.h"

namespace ohio {

struct UdFragment {
  uint32_t at = 0;  // in the put: the piece lands at the put's start plus this
  uint32_t bytes = 0;
  bool operator==(const UdFragment& o) const { return at == o.at && bytes == o.bytes; }
};

// The pieces of a put of `bytes` bytes (less than 4 GiB), each at most `payload_bytes` long (at
// least 1); a put of 0 bytes is one empty piece, since its immediate must still arrive.
std::vector<UdFragment> CutUdPut(uint32_t bytes, uint32_t payload_bytes);

// The receiving side's puts of one peer, by their number in the peer's stream.
class UdPutAssembly {
 public:
  // A piece of put `put` (of `total` bytes at `start` in its region, raising `imm`) has landed:
  // `bytes` bytes at `at` in the put. Returns the put's immediate once its last byte has landed,
  // nullopt before. A piece that contradicts what earlier pieces of the same put said (another
  // total, start or immediate), lies outside the put, or brings more bytes than the put has
  // left, is a protocol error (kProtocol): the peer's stream cannot be trusted further.
  Result<std::optional<uint32_t>> Landed(uint32_t put, uint64_t start, uint64_t total, uint32_t imm, uint32_t at,
                                         uint32_t bytes);
  // Puts begun and not complete (a peer that goes away leaves them; they are dropped with it).
  size_t incomplete() const { return puts_.size(); }

 private:
  struct Partial {
    uint64_t start = 0, total = 0, landed = 0;
    uint32_t imm = 0;
  };
  std::map<uint32_t, Partial> puts_;
};

}  // namespace ohio
