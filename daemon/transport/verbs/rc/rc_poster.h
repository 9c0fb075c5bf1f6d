// Posting on a peer's RC queue pairs: a put as RDMA WRITEs with a gather list straight from the
// registered segment into the peer's (the last one carrying the immediate), striped over the
// rails when large, or through bounce slots as SENDs until both regions are registered; the
// transport's own SENDs through a bounce slot; and the work requests in flight until their
// completions, which give back their bounce slots.
//
// It has no lock of its own: the transport calls it only under its lock (VerbsTransport::mu_),
// and a post that fails loses the peer through the callback, under that same lock.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/transport/transport.h"
#include "daemon/transport/verbs/pending_op.h"
#include "daemon/transport/verbs/rc/in_flight_table.h"
#include "daemon/transport/verbs/rc/rc_peer.h"
#include "daemon/transport/verbs/registration/bounce_pool.h"
#include "daemon/transport/verbs/registration/region_table.h"
#include "daemon/transport/verbs/verbs_wire.h"

namespace ohio {

class RcPoster {
 public:
  using LosePeer = std::function<void(PeerId, const std::string& reason)>;
  // `pools`: the bounce slots of each rail, registered at start.
  RcPoster(std::vector<std::unique_ptr<BouncePool>> pools, TransportStats* stats, LosePeer lose_peer)
      : pools_(std::move(pools)), stats_(stats), lose_peer_(std::move(lose_peer)) {}

  // Each false when out of resources for now, or the peer was lost posting. `generation`: that
  // of the peer's connections, which their completions are checked against.
  //
  // A put on rail op.rail: direct when `local` and `remote` are (op.bounce false), else through
  // bounce slots, as many fragments as there are slots now and the rest on a later call.
  bool Put(PeerId peer, RcPeer& rc, uint64_t generation, PendingOp& op, const LocalRegion* local,
           const RemoteRegion* remote, const LocalPiece* pieces, size_t count);
  // A SEND of header h and bytes [from, from + n) of the pieces, through a bounce slot.
  bool Send(PeerId peer, RcPeer& rc, uint64_t generation, size_t rail, const VerbsWireHeader& h,
            const LocalPiece* pieces, size_t count, uint64_t from, uint64_t n, InFlight f);

  // The work request a completion names, its bounce slot back; none when its peer went down since.
  std::optional<InFlight> Complete(uint64_t wr_id);
  // Every work request to `peer` given up on, their bounce slots back.
  void ReleasePeer(PeerId peer);
  bool AnyFor(PeerId peer) const { return in_flight_.AnyFor(peer); }

 private:
  // Work requests Writes makes of sges_ on c: one per max_sge entries, at least one.
  size_t WritesFor(const VerbsConnection& c) const;
  // Posts sges_ on c as RDMA WRITEs to remote_at (rkey), each work request tracked as `each`;
  // with `imm`, the last one carries it and completes the put. False if posting failed (the
  // peer is then lost).
  bool Writes(PeerId peer, VerbsConnection& c, uint64_t remote_at, uint32_t rkey, InFlight each,
              std::optional<uint32_t> imm);
  // A large put to a peer on several rails: first the stripes, one per rail, all at once (the
  // op then waits first in the peer's line), then, once they are acknowledged, the closing
  // zero-byte write with the immediate on the put's own rail.
  bool Striped(PeerId peer, RcPeer& rc, uint64_t generation, PendingOp& op, const LocalRegion* local,
               const RemoteRegion* remote, const LocalPiece* pieces, size_t count);

  std::vector<std::unique_ptr<BouncePool>> pools_;  // per rail
  TransportStats* stats_;
  LosePeer lose_peer_;
  InFlightTable in_flight_;
  std::vector<ibv_sge> sges_;     // one put's gather list, reused
  std::vector<ibv_send_wr> wrs_;  // one put's work requests, reused
};

}  // namespace ohio
