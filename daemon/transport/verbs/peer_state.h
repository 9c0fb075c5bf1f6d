// What the verbs transport keeps of one peer node, in parts each owned by the part of the
// transport that reads it: its dial (the transport), its line of work, its RC state (rc/), its
// seat in the RC pool and its move between the services (pool/). Its datagram link, when it is
// reached over UD, is the UD service's (ud/datagram_service.h). Guarded by the transport's lock,
// as the whole table of peers.
#pragma once

#include <cstdint>
#include <deque>

#include "daemon/transport/verbs/pending_op.h"
#include "daemon/transport/verbs/pool/peer_move.h"
#include "daemon/transport/verbs/pool/pool_seat.h"
#include "daemon/transport/verbs/rc/rc_peer.h"

namespace ohio {

struct VerbsPeerState {
  // Its dial. kAccepting: a dial of the peer's is being connected here (Accept, without the
  // lock).
  enum class State { kIdle, kDialing, kAccepting, kConnected };
  State state = State::kIdle;
  uint64_t generation = 0;      // bumped whenever its connections are replaced or dropped
  uint64_t incarnation = 0;     // of the peer daemon these connections go to
  uint64_t dial_floor = 0;      // its dials numbered up to this are stale
  std::deque<PendingOp> pending;  // its line: work waiting for a connection or resources
  RcPeer rc;                    // over RC: queue pairs, its regions (rc/rc_peer.h)
  PoolSeat pool;                // its place in the RC pool, its traffic (pool/pool_seat.h)
  PeerMove move;                // a move between the services (pool/peer_move.h)
};

}  // namespace ohio
