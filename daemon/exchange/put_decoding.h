// What the bits a transport hands back with a put say, decoded in one place: the immediate of a
// put that landed here and the cookie of one of this node's that completed (both laid out in
// wire.h). Pure: the progress engine learns from it which group an event is for and how many of
// its bytes are the ranks' data; the group's exchange, what the event means for the round.
#pragma once

#include <cstdint>

namespace ohio {

// A put that landed here or one of this node's that completed.
struct DecodedPut {
  uint32_t tag = 0;       // the group's tag on this node
  uint32_t delivery = 0;  // a landed put's delivery field (0 for a completion)
  uint32_t parity = 0;    // a completion's round parity (0 for a landed put)
  bool eager_header = false;  // its bytes begin with an eager header (64 bytes)
  bool vector_cube = false;   // a hypercube alltoallv message: a header line and a size table
  bool tables = false;        // it carried count tables: none of its bytes are the ranks' data
};

// A put that landed with immediate `imm`.
DecodedPut DecodeLandedPut(uint32_t imm);
// One of this node's puts that completed with `cookie`.
DecodedPut DecodeCompletedPut(uint64_t cookie);
// The ranks' data among a put's `bytes`. `group_nodes`: the nodes of the group it is for, 0 when
// that group is not open here; a hypercube alltoallv message's size table is then not told
// apart from its header line, and only the header is taken off.
uint64_t PayloadBytes(const DecodedPut& put, uint64_t bytes, uint32_t group_nodes);

}  // namespace ohio
