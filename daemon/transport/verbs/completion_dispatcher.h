// The verbs transport's completions: every rail's completion queue polled, and each completion
// settled by what it is. A datagram queue pair's goes to the UD service. An RC receive is taken
// in: data that landed (an RDMA WRITE's immediate), or one of the SENDs peers exchange over RC (a
// message, a bounce put placed in our region, a region announced or gone, a move notice). An RC
// send done gives back its slot, counts a stripe of the put first in its peer's line, reports
// the put done, or loses the peer when it failed.
//
// It owns nothing but the reading of completions: what they settle is the parts' (Parts). It has
// no lock of its own: the transport polls it only under its lock (VerbsTransport::mu_), and it
// calls the parts and the transport back under that same lock.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/transport/peer_directory.h"
#include "daemon/transport/transport.h"
#include "daemon/transport/verbs/event_outbox.h"
#include "daemon/transport/verbs/peer_lines.h"
#include "daemon/transport/verbs/peer_state.h"
#include "daemon/transport/verbs/pool/move_driver.h"
#include "daemon/transport/verbs/rc/rc_connector.h"
#include "daemon/transport/verbs/rc/rc_poster.h"
#include "daemon/transport/verbs/registration/region_table.h"
#include "daemon/transport/verbs/ud/datagram_service.h"
#include "daemon/transport/verbs/verbs_rail.h"

namespace ohio {

class CompletionDispatcher {
 public:
  // The transport's parts a completion may settle something of; the transport's, kept by it.
  struct Parts {
    std::vector<Rail*> rails;
    std::deque<VerbsPeerState>* peers = nullptr;
    const PeerDirectory* directory = nullptr;
    RcConnector* connector = nullptr;
    RcPoster* rc = nullptr;
    DatagramService* datagrams = nullptr;
    MoveDriver* moves = nullptr;
    RegionTable* regions = nullptr;
    PeerLines* lines = nullptr;
    EventOutbox* events = nullptr;
    TransportStats* stats = nullptr;
  };
  // The transport loses the peer: `never_up` when the rail that failed never reached it.
  using LosePeer = std::function<void(PeerId, const std::string& reason, bool never_up)>;

  CompletionDispatcher(Parts parts, LosePeer lose_peer) : parts_(std::move(parts)), lose_peer_(std::move(lose_peer)) {}

  // Every rail's completion queue polled dry; the completions handled.
  int Poll();

 private:
  void OnCompletion(const ibv_wc& wc, UdClock::time_point polled);
  void OnRcReceive(const ibv_wc& wc);
  void OnRcSendDone(const ibv_wc& wc);
  // A SEND the peer posted on `rail` over RC, in the receive slot at `data`.
  void OnRcSend(PeerId peer, VerbsPeerState& p, size_t rail, const uint8_t* data, uint32_t bytes);

  Parts parts_;
  LosePeer lose_peer_;
};

}  // namespace ohio
