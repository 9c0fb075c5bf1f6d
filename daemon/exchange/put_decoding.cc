#include "daemon/exchange/put_decoding.h"

#include "daemon/exchange/wire.h"

namespace ohio {

DecodedPut DecodeLandedPut(uint32_t imm) {
  DecodedPut p;
  p.tag = ImmTag(imm);
  p.delivery = ImmDelivery(imm);
  p.eager_header = IsEagerImm(p.delivery);
  p.vector_cube = IsVectorCubeImm(p.delivery);
  p.tables = IsVectorTablesImm(p.delivery);
  return p;
}

DecodedPut DecodeCompletedPut(uint64_t cookie) {
  DecodedPut p;
  p.tag = put_cookie::Tag(cookie);
  p.parity = put_cookie::RoundLow(cookie) & 1;
  p.eager_header = put_cookie::IsEager(cookie);
  p.vector_cube = put_cookie::IsVectorCube(cookie);
  p.tables = put_cookie::IsTables(cookie);
  return p;
}

uint64_t PayloadBytes(const DecodedPut& put, uint64_t bytes, uint32_t group_nodes) {
  if (put.tables) return 0;
  uint64_t header = 0;
  if (put.vector_cube && group_nodes != 0) {
    // A void call's message is a header line alone.
    header = bytes <= kEagerHeaderBytes ? bytes : VectorCubeLineBytes(group_nodes);
  } else if (put.eager_header) {
    header = kEagerHeaderBytes;
  }
  return bytes < header ? 0 : bytes - header;
}

}  // namespace ohio
