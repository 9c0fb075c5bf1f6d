// Every peer's line of work (peer_state.h's `pending`): puts and the transport's own SENDs,
// posted in order as room allows on the service that carries the peer: its RC queue pairs
// (rc/rc_poster.h: direct, striped or bounce puts) or its datagram link (ud/datagram_service.h).
// It chooses the rail of each put to a peer's region, and keeps every connected peer's rails
// alive while the engine polls.
//
// It has no lock of its own: the transport calls it only under its lock (VerbsTransport::mu_),
// which also guards the table of peers it reads; a post that fails loses the peer through the
// poster's or the service's callback, under that same lock. The transport grows the table of
// peers before it names a peer here.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

#include "daemon/transport/transport.h"
#include "daemon/transport/verbs/pending_op.h"
#include "daemon/transport/verbs/peer_state.h"
#include "daemon/transport/verbs/rc/rc_poster.h"
#include "daemon/transport/verbs/registration/region_table.h"
#include "daemon/transport/verbs/ud/datagram_service.h"

namespace ohio {

class PeerLines {
 public:
  PeerLines(std::deque<VerbsPeerState>* peers, RcPoster* rc, DatagramService* datagrams, const RegionTable* regions,
            TransportStats* stats)
      : peers_(peers), rc_(rc), datagrams_(datagrams), regions_(regions), stats_(stats) {}

  // A put (`op` without its pieces): posted at once from the caller's pieces when nothing waits
  // before it, else copied into the line to wait.
  void Put(PeerId peer, PendingOp op, const LocalPiece* pieces, size_t count);
  // A message of the transport's user, as Put.
  void Send(PeerId peer, const void* message, size_t bytes);
  // A SEND of the transport's own (VerbsWireHeader type) at the end of the peer's line, on
  // `rail` over RC; then the line flushed.
  void Enqueue(PeerId peer, uint32_t type, uint64_t key, std::string payload, int rail);
  // Posts what the peer's line can now, in order.
  void Flush(PeerId peer);
  // Every pass of the engine: keepalives when due, every line with work flushed.
  void Tend(std::chrono::steady_clock::time_point now);

 private:
  // Each false when out of resources for now (or the peer went down posting).
  bool PostOp(PeerId peer, VerbsPeerState& p, PendingOp& op);
  bool PostControl(PeerId peer, VerbsPeerState& p, uint32_t type, uint64_t key, const void* payload, size_t bytes,
                   int rail);
  bool PostPut(PeerId peer, VerbsPeerState& p, PendingOp& op, const LocalPiece* pieces, size_t count);
  // The rail of every put to the peer's region `key`, chosen at the first from the rail tiers
  // of our region the put reads from (registered or not), then kept.
  size_t PutRail(VerbsPeerState& p, uint64_t key, const LocalPiece* pieces, size_t count);

  std::deque<VerbsPeerState>* peers_;
  RcPoster* rc_;
  DatagramService* datagrams_;
  const RegionTable* regions_;
  TransportStats* stats_;
  std::chrono::steady_clock::time_point last_keepalive_;
};

}  // namespace ohio
