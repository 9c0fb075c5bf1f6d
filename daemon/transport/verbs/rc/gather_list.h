// A put's bytes are a list of pieces of one registered segment. These cut a byte range of that
// list out, either as scatter/gather entries the HCA reads itself (a direct RDMA write) or
// copied into a bounce slot (a SEND).
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "daemon/transport/transport.h"

namespace ohio {

// Bytes [from, from + len) of the concatenated pieces as scatter/gather entries under `lkey`.
void RangeSges(const LocalPiece* pieces, size_t count, uint64_t from, uint64_t len, uint32_t lkey,
               std::vector<ibv_sge>* out);

// Copies bytes [from, from + len) of the concatenated pieces to dst.
void Gather(const LocalPiece* pieces, size_t count, uint64_t from, uint64_t len, uint8_t* dst);

}  // namespace ohio
