// What the verbs transport keeps for one peer node reached over UD (outside the pool of RC queue
// pairs): where its datagram queue pair is, both directions' reliability (ud_reliability.h), the
// puts being put back together (ud_put_fragments.h), and what makes UD keep RC's order.
//
// RC delivers a peer's puts and messages in the order they were posted, and the exchange relies
// on it (a credit after the data it frees). Datagrams are placed as they come, whatever their
// order, but what they raise (a put's immediate, a message) is held until every datagram before
// it in the peer's stream has arrived, so the events leave in stream order, as on RC. On the
// sending side a put is done (its source may be reused) once the peer acknowledged its last
// datagram and every one before it.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <deque>
#include <map>
#include <set>

#include "daemon/transport/transport.h"
#include "daemon/transport/verbs/move_notice.h"
#include "daemon/transport/verbs/ud/ud_put_fragments.h"
#include "daemon/transport/verbs/ud/ud_reliability.h"

namespace ohio {

struct UdPeerLink {
  // Our stream to it starts at `first_sent`, its stream to us at `first_received` (each end
  // picks its own at every dial).
  UdPeerLink(UdStreamOptions options, ibv_ah* address, uint32_t remote_qpn, uint32_t first_sent,
             uint32_t first_received)
      : ah(address),
        qpn(remote_qpn),
        send(options, first_sent),
        receive(options.window, first_received) {}
  ~UdPeerLink() {
    if (ah != nullptr) ibv_destroy_ah(ah);
  }
  UdPeerLink(const UdPeerLink&) = delete;
  UdPeerLink& operator=(const UdPeerLink&) = delete;

  ibv_ah* ah = nullptr;  // on rail 0: one rail carries a datagram peer
  uint32_t qpn = 0;
  UdSendWindow send;
  UdReceiveWindow receive;
  UdPutAssembly assembly;

  // Sending: the send slot of every datagram not acknowledged yet, by its number.
  struct Sent {
    uint32_t slot = 0;
    uint32_t bytes = 0;
  };
  std::map<uint32_t, Sent> slot_of_seq;
  struct SentPut {
    uint32_t last_seq = 0;
    uint64_t cookie = 0;
    uint64_t bytes = 0;
  };
  std::deque<SentPut> sent_puts;  // in stream order, until acknowledged
  uint32_t next_put = 0;
  bool ack_due = false;  // a datagram arrived since the last acknowledgement we sent

  // Receiving: events held until their stream is whole before them, by their datagram's
  // position in the stream counted from the start (64 bits: never wraps).
  uint64_t in_order = 0;  // datagrams of the stream held without a gap
  std::map<uint64_t, TransportEvent> held;
  std::map<uint64_t, MoveNotice> held_notices;  // a move's notices, taken in stream order too
  std::map<uint32_t, uint64_t> last_of_put;  // a put's last datagram's position, once it arrived
  std::set<uint32_t> dropped_puts;  // a piece had nowhere to land: the put raises nothing
};

}  // namespace ohio
