// Work for a peer that waits in its line, in order, for the connection or for room to post it
// (send credits, bounce slots, the stripes of the put before it): a put, or a SEND of the
// transport's own (a message, a region notice, a keepalive). A peer's messages and puts may
// depend on each other (a credit after the data), so nothing overtakes what waits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "daemon/transport/transport.h"
#include "daemon/transport/verbs/verbs_wire.h"

namespace ohio {

struct PendingOp {
  enum class Kind { kPut, kSend };
  Kind kind = Kind::kSend;
  // kPut
  std::vector<LocalPiece> pieces;  // copied from the caller's once the put has to wait
  uint64_t key = 0;
  uint64_t offset = 0;
  uint64_t total = 0;
  uint32_t imm = 0;
  uint64_t cookie = 0;
  bool started = false;
  bool bounce = false;
  uint64_t sent = 0;
  uint32_t datagram_put = 0;  // over UD: the put's number in the peer's stream
  // A striped put: its stripes are out on every rail and it stays first in its peer's line
  // until all are acknowledged, then closes with a zero-byte write carrying the immediate.
  bool striped = false;
  uint32_t stripes_left = 0;  // work requests of the stripes not completed yet
  uint64_t close_addr = 0;    // where the closing write points (a valid address of the region)
  uint32_t close_rkey = 0;
  // kSend
  uint32_t type = VerbsWireHeader::kMessage;
  std::string payload;
  int rail = -1;  // -1: the put picks one; sends default to rail 0
  // A notice of a move between the services (move_notice.h): posted on the old service even
  // while the rest of the line is held for the new one; `move_last`: the last of them.
  bool move_notice = false;
  bool move_last = false;
};

}  // namespace ohio
