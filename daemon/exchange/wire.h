// What the daemons of a group put on the wire to each other, in one place: a peer of another
// version must read these bytes alike, so a change to any of them is a protocol change.
//
// - The small messages (ROUND_READY, CREDIT, RANK_GONE and ROUND_READY's reasons
//   kReadyTooLarge and kReadyMixed): ExchangeMessage, daemon/exchange/exchange_message.h.
// - A put's 32-bit immediate, the receiver's tag for the group and a delivery field:
//   EncodeImm, ImmTag, ImmDelivery, shm/plan/exchange_plan.h. Announced rounds number their
//   deliveries below kMaxRendezvousDeliveries; the top bit marks an eager round's put, and its
//   low bits say which kind (EagerImmDelivery, BruckImmDelivery, VectorTablesImmDelivery,
//   VectorCubeImmDelivery): shm/plan/eager_plan.h.
// - The 64-byte header in front of every eager put's block and every hypercube message
//   (EagerHeader, its magic and flags kEagerOptedOut, kEagerVectorStaged, kEagerVectorTables):
//   shm/plan/eager_plan.h; the alltoallv hypercube's flags (kEagerVectorCubeVoid,
//   kEagerVectorCubeFits) and the size table behind its header line: shm/plan/vector_cube.h.
// - Where a put lands in the peer's SRB: EagerSlotOffset (shm/plan/eager_plan.h), the hypercube's
//   inboxes (BruckInboxStride, shm/plan/bruck_plan.h), announced rounds' PlanPuts
//   (shm/plan/exchange_plan.h).
// - The put cookie (below): never sent, but what a transport hands back with a put's
//   completion, so the progress engine can tell whose put it was and how to count its bytes
//   (decoded, with the immediate, in put_decoding.h).
#pragma once

#include <cstdint>

#include "daemon/exchange/exchange_message.h"
#include "shm/plan/bruck_plan.h"
#include "shm/plan/eager_plan.h"
#include "shm/plan/exchange_plan.h"
#include "shm/plan/vector_cube.h"

namespace ohio {
namespace put_cookie {

// What a put carries back to its kPutDone: the group's tag (bits 40..63), the round's low bits
// (32..39), whether it was an eager put, whose bytes include a header (31), whether it carried
// count tables rather than the ranks' data, so not payload (30), whether it was a hypercube
// alltoallv message, whose header line is followed by a size table (29), its index in the round
// (0..28).
inline uint64_t Make(uint32_t tag, uint32_t round, bool eager, uint32_t index, bool tables = false,
                     bool cube = false) {
  return uint64_t{tag} << 40 | uint64_t{round & 0xff} << 32 | uint64_t{eager ? 1u : 0u} << 31 |
         uint64_t{tables ? 1u : 0u} << 30 | uint64_t{cube ? 1u : 0u} << 29 | index;
}
inline uint32_t Tag(uint64_t cookie) { return static_cast<uint32_t>(cookie >> 40); }
inline uint32_t RoundLow(uint64_t cookie) { return static_cast<uint32_t>(cookie >> 32) & 0xff; }
inline bool IsEager(uint64_t cookie) { return ((cookie >> 31) & 1) != 0; }
inline bool IsTables(uint64_t cookie) { return ((cookie >> 30) & 1) != 0; }
inline bool IsVectorCube(uint64_t cookie) { return ((cookie >> 29) & 1) != 0; }

}  // namespace put_cookie
}  // namespace ohio
