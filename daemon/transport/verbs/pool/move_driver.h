// The verbs transport's moves between its two services while groups keep running: the pool of RC
// queue pairs planned from each interval's traffic (rc_pool_plan.h), a peer promoted to RC or
// demoted to UD as the plan asks, and the handshake that keeps both ends agreeing which service
// carries what (each peer's side of it decided by peer_move.h; this class does what it decides).
//
// A move never has a put in flight on the old service when the new one starts, and what the
// peer raises (a put's immediate, a message) still leaves in the order it was posted:
//   1. The starter holds its line and waits until nothing of its is in flight to the peer
//      (every datagram acknowledged, every work request completed), then posts a notice as the
//      last thing on the old service: to RC with new queue pairs' endpoints (one per rail), to
//      UD with its datagram queue pair and where its new stream starts.
//   2. The other end takes the notice after everything the starter sent before it (UD holds
//      events until the stream is whole; over RC a notice comes on every rail, behind what was
//      posted there), connects its end of the new service, and answers on the old service,
//      behind whatever it had posted there, then holds its line. A move to RC it has no room
//      for it refuses, and nothing changes.
//   3. The starter takes the answer after everything the other end sent before it, connects its
//      end and switches: the old service is dropped and its line goes on the new one.
//   4. The other end switches when the first thing the starter sends on the new service arrives
//      (the starter sends at once: a keepalive on every rail, or a datagram), so its own first
//      sends find the starter's end ready.
// When both ends start the same move at once, the node whose name sorts first goes on and the
// other answers it. A move that is not answered within the datagrams' give-up time loses the
// peer, as a connection that stops answering does.
//
// It has no lock of its own: the transport calls it only under its lock (VerbsTransport::mu_),
// which also guards the table of peers it reads and writes, and it calls the transport back
// (Host) under that same lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "daemon/transport/transport.h"
#include "daemon/transport/verbs/move_notice.h"
#include "daemon/transport/verbs/peer_state.h"
#include "daemon/transport/verbs/pool/rc_pool_plan.h"
#include "daemon/transport/verbs/rc/rc_connector.h"
#include "daemon/transport/verbs/ud/datagram_service.h"

namespace ohio {

class MoveDriver {
 public:
  using Connections = RcConnector::Connections;
  struct Options {
    uint32_t rc_pool = 0;  // RC queue pairs per rail, at most
    std::chrono::milliseconds interval{1000};  // how often the pool is planned
    std::chrono::milliseconds give_up_after{8000};  // a move not completed by then loses the peer
  };
  // What the driver asks of the transport, called under the transport's lock.
  struct Host {
    std::function<void(PeerId)> flush;  // post what the peer's line can now
    std::function<void(PeerId, const std::string& reason)> lose_peer;
    // The peer's RC queue pairs made its service: its regions announced, its line flushed.
    std::function<void(PeerId, Connections)> adopt;
    // Nothing more of the peer's is written into our regions over RC: closing ones stop waiting.
    std::function<void(PeerId)> forget_peer_in_closing;
    // Our RC work requests to the peer given up on, their bounce slots back; any in flight?
    std::function<void(PeerId)> release_in_flight;
    std::function<bool(PeerId)> any_in_flight;
    std::function<void(TransportEvent)> emit;
    std::function<std::string(PeerId)> name;
  };

  // `plan` may be null: the pool then goes to the first peers connected, and stays theirs.
  MoveDriver(std::string self, Options options, std::unique_ptr<RcPoolPlan> plan, std::deque<VerbsPeerState>* peers,
             RcConnector* connector, DatagramService* datagrams, TransportStats* stats, Host host);

  // Peers holding an RC queue pair, or about to.
  uint32_t RcPeersHeld() const;
  // Every pass: the pool planned when its interval is up, the moves it asks for started, moves
  // that timed out given up on with their peer, notices of drained moves posted.
  void Tend(std::chrono::steady_clock::time_point now);
  // A move notice from the peer, taken after everything it sent before it.
  void OnNotice(PeerId peer, const MoveNotice& notice);
  // The switch: from the starter's side once the answer is in (`remote`: the peer's new
  // endpoints), from the other side (null) once the first op on the new service arrives.
  void FinishToRc(PeerId peer, const std::vector<QpEndpoint>* remote);
  void FinishToUd(PeerId peer, const QpEndpoint* remote);

 private:
  void Plan(std::chrono::steady_clock::time_point now);
  // Nothing of ours to the peer is in flight, and the line's first op (if any) is not begun.
  bool Drained(PeerId peer, const VerbsPeerState& p) const;
  void SendNotices(PeerId peer, VerbsPeerState& p, const MoveNotice& notice, bool front);
  void Answer(PeerId peer, VerbsPeerState& p, const MoveNotice& notice);
  void Abandon(VerbsPeerState& p);
  // The RC queue pairs dropped (a move to UD, or a move to RC abandoned), and what they held.
  void DropRcConnections(PeerId peer, VerbsPeerState& p);
  size_t rails() const { return connector_->rails(); }

  std::string self_;
  Options options_;
  std::unique_ptr<RcPoolPlan> plan_;
  std::chrono::steady_clock::time_point last_plan_;
  std::deque<VerbsPeerState>* peers_;
  RcConnector* connector_;
  DatagramService* datagrams_;
  TransportStats* stats_;
  Host host_;
};

}  // namespace ohio
