// The verbs transport's UD service: the peers outside the pool of RC queue pairs, reached through
// rail 0's one datagram queue pair. A put is cut into datagrams of the rail's MTU, each carrying
// where its bytes land, sent from send slots (ud_queue_pair.h) and kept there until the peer
// acknowledges it, then placed by the receiving daemon in its region, which makes the one copy
// an RDMA write does not. Reliability (ud_reliability.h): numbered datagrams, cumulative and
// selective acknowledgements riding on every datagram (or alone when nothing else goes back),
// retransmission after a timeout, duplicates dropped, a bounded window, and a peer that
// acknowledges nothing for give_up_after is lost as an RC peer whose sends fail is. What the
// datagrams raise leaves in stream order (ud_peer_link.h).
//
// It owns the datagram queue pairs, every peer's datagram link, who sent a datagram, and the
// timer that wakes a sleeping engine for a retransmission. It has no lock of its own: the
// transport calls it only under its lock (VerbsTransport::mu_), and it calls the transport back
// (Host) under that same lock, so nothing here is ever touched by two threads at once.
#pragma once

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/log_rate_limiter.h"
#include "common/status.h"
#include "daemon/transport/transport.h"
#include "daemon/transport/verbs/move_notice.h"
#include "daemon/transport/verbs/pending_op.h"
#include "daemon/transport/verbs/qp_endpoint.h"
#include "daemon/transport/verbs/ud/datagram_source.h"
#include "daemon/transport/verbs/ud/ud_peer_link.h"
#include "daemon/transport/verbs/ud/ud_queue_pair.h"
#include "daemon/transport/verbs/ud_wire.h"
#include "daemon/transport/verbs/verbs_rail.h"

namespace ohio {

class DatagramService {
 public:
  struct Options {
    UdStreamOptions stream;
    // Datagrams dropped on arrival, one in this many at random (0: none): loss the reliability
    // must hide, for tests on fabrics that lose nothing.
    uint32_t drop_one_datagram_in = 0;
  };
  // A region of ours a peer's datagrams may still land in (its group has not closed).
  struct OpenRegion {
    uint8_t* base = nullptr;
    uint64_t bytes = 0;
  };
  // What the service asks of the transport, called under the transport's lock.
  struct Host {
    std::function<void(TransportEvent)> emit;
    std::function<void(PeerId, const std::string& reason)> lose_peer;
    std::function<std::string(PeerId)> name;
    // A datagram of the peer's arrived, before it is taken in: the first one may finish a move
    // to UD the peer started, which makes the link the datagram is for.
    std::function<void(PeerId)> arrived;
    // A move notice, taken in stream order after everything the peer sent before it.
    std::function<void(PeerId, const MoveNotice&)> move_notice;
    std::function<std::optional<OpenRegion>(uint64_t key)> open_region;
  };

  // A datagram queue pair on each of `rails` and the retransmission timer; with no rails, a
  // service that has neither (every peer gets an RC queue pair) and refuses every peer.
  static Result<std::unique_ptr<DatagramService>> Create(const std::vector<Rail*>& rails, Options options,
                                                         Host host, TransportStats* stats);
  ~DatagramService();
  DatagramService(const DatagramService&) = delete;
  DatagramService& operator=(const DatagramService&) = delete;

  // The timer that wakes the engine for the next retransmission (-1 without the service).
  int timer_fd() const { return timer_fd_; }
  // What a datagram carries of a put (rail 0's MTU less the header).
  uint32_t payload_bytes() const;
  // Our datagram queue pairs, each telling where this end's new stream starts.
  std::vector<QpEndpoint> Endpoints() const;
  // An address handle for the peer's datagram queue pairs (callable without the transport's lock).
  Result<ibv_ah*> AddressOf(const std::vector<QpEndpoint>& remote, const std::string& peer);
  // The rail of the queue pair that carries every datagram peer.
  std::string rail() const;

  // A link to the peer's datagram queue pair at `remote`: ours starts at `first_sent`, its at
  // remote.psn; the peer's datagrams are taken from then on. Takes `ah`.
  void Link(PeerId peer, ibv_ah* ah, const QpEndpoint& remote, uint32_t first_sent);
  // Forgets the peer's link (its send slots, its entry by sender, its tending); returns the puts
  // sent on it whose acknowledgement has not come back.
  std::deque<UdPeerLink::SentPut> Unlink(PeerId peer);
  bool linked(PeerId peer) const { return links_.count(peer) != 0; }
  // Nothing sent to the peer waits for its acknowledgement.
  bool Drained(PeerId peer) const;

  // Each false when out of room for now (window, send slots, send queue) or the peer was lost.
  bool PostPut(PeerId peer, PendingOp& op, const LocalPiece* pieces, size_t count);
  // A SEND of the transport's (VerbsWireHeader type) as a datagram; the types UD has no use for
  // (region notices: a datagram is placed by its receiver's key) are taken as sent.
  bool PostSend(PeerId peer, uint32_t verbs_type, const void* payload, size_t bytes);

  // A completion of a datagram queue pair's work request; `now` is when it was polled, what an
  // acknowledgement is timed by.
  void OnCompletion(const ibv_wc& wc, UdClock::time_point now);
  // Acknowledgements due, retransmissions due, peers that stopped answering. Every pass.
  void Tend(UdClock::time_point now);
  // Before sleeping: the timer set for the next retransmission (disarmed with nothing in
  // flight); false when an acknowledgement is still to be sent, so not to sleep.
  bool ArmTimer();

 private:
  DatagramService(Options options, Host host, TransportStats* stats);
  UdPeerLink* link(PeerId peer);
  // Staged on the datagram queue pair (UdQueuePair::Stage): the caller posts them.
  bool Post(PeerId peer, UdPeerLink& l, UdWireHeader h, const LocalPiece* pieces, size_t count, uint64_t from,
            uint32_t n, UdClock::time_point now);
  void SendAck(UdPeerLink& l);
  void OnDatagram(PeerId peer, UdPeerLink& l, const UdWireHeader& h, const uint8_t* payload, uint32_t n,
                  UdClock::time_point now);
  void ReleaseHeld(PeerId peer, UdPeerLink& l);

  Options options_;
  Host host_;
  TransportStats* stats_;
  std::vector<std::unique_ptr<UdQueuePair>> qps_;  // per rail; rail 0's carries every peer
  std::map<PeerId, std::unique_ptr<UdPeerLink>> links_;
  DatagramSenders senders_;  // peers by where their datagrams come from
  // Datagrams refused because no peer could be told as their sender (datagram_source.h).
  LogRateLimiter unidentified_log_{std::chrono::seconds(10), 5};
  int timer_fd_ = -1;
  // The peers with datagrams unacknowledged or an acknowledgement to send: what each pass tends
  // and the timer is armed for. The rest have nothing to do, and at thousands of nodes walking
  // every peer on every pass would cost more than the datagrams.
  std::set<PeerId> to_tend_;
  // Which datagrams drop_one_datagram_in drops: at random, not every n-th, which a sender's
  // retransmissions could meet in step every time.
  std::mt19937 drop_chance_{std::random_device{}()};
};

}  // namespace ohio
