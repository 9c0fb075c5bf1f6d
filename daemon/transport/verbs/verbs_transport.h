// The transport over RDMA verbs (InfiniBand, RoCE, Soft-RoCE). One RC queue pair per peer node
// on every rail (active HCA port) the daemon opened, shared by every group; connected by
// exchanging endpoints through the peer gRPC service: the node that lacks a connection dials
// (Connect -> dialer -> the peer's Accept), and when both dial at once the node whose name
// sorts first wins. Moving a queue pair to RTR resolves the peer's address (RoCE) and is tried
// again while it is not resolved yet, for up to rtr-retry-budget-ms per dial (transition_retry.h);
// queue pairs are made and connected without the transport's lock, which every put takes, and
// adopted under it only if no other dial took the peer meanwhile (its generation).
//
// Data: a put is an RDMA WRITE WITH IMMEDIATE straight from the registered segment into the
// peer's registered segment, one work request with a gather list of the put's pieces (split
// only past the device's SGE limit). A group's puts to a peer keep to one rail, chosen at the
// first (shm/placement/rail_choice.h): the nearest of the group's rail order (PreferRails) that the peer
// is connected on, or by key. A put of 256 KiB or more to a peer reached on several
// rails is striped: one RDMA WRITE per rail, all at once, then, once every stripe is
// acknowledged, a zero-byte WRITE WITH IMMEDIATE on the put's own rail. Registration runs on a background thread
// (MemoryRegistrar); until both ends' regions are registered a put goes through bounce
// buffers registered at start: copied into send slots, sent, and copied at the receiver into
// its (not yet registered) segment. Small messages are SENDs. Completions come from one
// completion queue per rail. A pass of the spinning progress engine only polls the queues
// (no system call); the queues are armed, and their completion channels drained, only in
// PrepareToSleep, so event_fd() wakes an engine that sleeps and costs nothing while it spins.
//
// A queue pair error (peer gone, retries exceeded) reports kPeerDown and drops the peer's
// connections; the next Connect makes new ones. Regions going away are announced to peers,
// and deregistered only once every rail has acknowledged that nothing more is in flight.
//
// VerbsTransport is the Transport interface and the wiring between its parts: it keeps the
// table of peers (peer_state.h), each peer's dial, and the lock. Its methods are split by job:
// verbs_transport.cc (start and the wiring, stop, puts and sends handed to the lines,
// statistics), verbs_connecting.cc (dials and their adoption, a peer lost),
// verbs_registration.cc (regions announced and closed with the peers) and verbs_progress.cc
// (a pass of the engine, and the checks before it sleeps).
// The rest is in parts that own their state, each a class behind a narrow interface:
//   peer_lines.h           every peer's line, posted in order on its service; put rails; keepalives
//   completion_dispatcher.h  every rail's completions polled, each settled by what it is
//   event_outbox.h         events out to the engine, and the eventfd that wakes it
//   rc/rc_connector.h      RC queue pairs made and connected, and which peer a receive is for
//   rc/rc_poster.h         direct, striped and bounce puts and SENDs, the work requests in flight
//   ud/datagram_service.h  the UD service: datagram queue pairs, every peer's link, reliability
//   pool/move_driver.h     the pool planned from traffic, and moves between RC and UD
//   registration/region_table.h  our group regions: registered, closing, parked
// A part that needs another (an event out, a line to flush) holds it or is given the functions
// to call at start; one that must lose a peer calls the transport back (PeerDown).
//
// Locks: mu_ guards the table of peers, and every part's state: the parts have no lock of their
// own and are called only under mu_ (and call back under it), except RcConnector's making and
// connecting of queue pairs, which touch only atomics and run without it, and the outbox's
// wake-up (an eventfd and an atomic), written from any thread. The registrar's own lock guards
// its queue of jobs only. The order is
//   mu_  ->  MemoryRegistrar::mu_
// (Register and Deregister are called under mu_; the registrar calls OnRegistered, which takes
// mu_, with its own lock released), never the other way.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "daemon/transport/peer_directory.h"
#include "daemon/transport/transport.h"
#include "daemon/transport/verbs/completion_dispatcher.h"
#include "daemon/transport/verbs/event_outbox.h"
#include "daemon/transport/verbs/pending_op.h"
#include "daemon/transport/verbs/peer_lines.h"
#include "daemon/transport/verbs/peer_state.h"
#include "daemon/transport/verbs/pool/move_driver.h"
#include "daemon/transport/verbs/rc/in_flight_table.h"
#include "daemon/transport/verbs/rc/queue_pair.h"
#include "daemon/transport/verbs/rc/rc_connector.h"
#include "daemon/transport/verbs/rc/rc_poster.h"
#include "daemon/transport/verbs/rc/transition_retry.h"
#include "daemon/transport/verbs/rc/verbs_connection.h"
#include "daemon/transport/verbs/registration/bounce_pool.h"
#include "daemon/transport/verbs/registration/memory_registrar.h"
#include "daemon/transport/verbs/registration/region_table.h"
#include "daemon/transport/verbs/ud/datagram_service.h"
#include "daemon/transport/verbs/ud_wire.h"
#include "daemon/transport/verbs/verbs_rail.h"
#include "daemon/transport/verbs/verbs_wire.h"

namespace ohio {

// A dial: this daemon's endpoints, one per rail, and who is dialling. When both nodes dial at
// once, one dial is accepted and the other must be recognised as stale even if it arrives
// after the connection is up: the answer tells the dialler how many dials the other side had
// begun, and a later dial from the same incarnation numbered no higher is refused.
// The dialler also offers its datagram queue pairs: the pair's data goes over UD when either
// end's pool of RC queue pairs is full (the dialler's: it offers no RC endpoints then).
struct DialOffer {
  uint64_t incarnation = 0;
  uint64_t dial_seq = 0;
  std::vector<QpEndpoint> endpoints;
  std::vector<QpEndpoint> datagram_endpoints;
  bool datagram_only = false;
};
struct DialAnswer {
  uint64_t incarnation = 0;
  uint64_t dials_started = 0;
  std::vector<QpEndpoint> endpoints;  // empty when `datagram`
  bool datagram = false;
  std::vector<QpEndpoint> datagram_endpoints;
};

class VerbsTransport : public Transport {
 public:
  // Sends the offer to `peer`'s daemon (its Accept) and returns its answer.
  using Dialer = std::function<Result<DialAnswer>(const std::string& peer, const DialOffer& offer)>;

  struct Options {
    std::chrono::milliseconds registration_delay{0};  // see MemoryRegistrar
    // RC queue pairs per rail, at most: peers beyond it are reached over the rail's one UD queue
    // pair (0: every peer; kUnlimitedRcPool: none, one RC queue pair per peer node).
    uint32_t rc_pool = 256;
    // A datagram is sent again once unacknowledged for the measured round trip's timeout, 10 ms
    // at least (ud_reliability.h), and a peer that acknowledges nothing for 8 s is lost (RC's
    // retries give up after about 2 s). The window is what an acknowledgement's selective mask
    // describes whole (64 datagrams past the cumulative point): with a wider one, datagrams the
    // receiver holds but no acknowledgement can name are sent again as if lost, and their copies
    // crowd the receive ring the lost one must come back through.
    UdStreamOptions datagrams{64, std::chrono::microseconds(10000), std::chrono::milliseconds(8000)};
    // How often the pool is planned from the traffic of the interval (rc_pool_plan.h); a move
    // the peer does not complete within the datagrams' give-up time loses the peer.
    std::chrono::milliseconds rc_pool_interval{1000};
    // Datagrams dropped on arrival, one in this many at random (0: none): loss the reliability must hide,
    // for tests on fabrics that lose nothing.
    uint32_t drop_one_datagram_in = 0;
  };
  static constexpr uint32_t kUnlimitedRcPool = UINT32_MAX;

  // The longest the queue pairs of one dial may take trying RTR again (kLongestRtrRetryBudget),
  // which the dialler's deadline (QueuePairDialer) is checked against; the default budget.
  static constexpr std::chrono::milliseconds kRtrRetryBudget = RcConnector::kRtrRetryBudget;

  static Result<std::unique_ptr<VerbsTransport>> Start(const std::string& self, std::vector<std::unique_ptr<Rail>> rails,
                                                       Options options);
  ~VerbsTransport() override;

  void set_dialer(Dialer dialer);
  // How long the queue pairs of one dial, every rail together, may take trying RTR again while
  // the peer's address is not resolved (the kernel waits a second per attempt): a few attempts
  // by default, 0 for one attempt only; at most kRtrRetryBudget (longer is taken as that). Shorter
  // than any sensible group timeout, which stays what bounds a group's setup (a connection
  // serves every group). Set before the first dial; a later one applies to the dials after it.
  void set_rtr_retry_budget(std::chrono::milliseconds budget);
  // A peer dialled: connects a queue pair per rail to its endpoints and returns ours.
  Result<DialAnswer> Accept(const std::string& peer, const DialOffer& offer);

  const char* name() const override { return "verbs"; }
  std::string address() const override;
  Result<uint64_t> RegisterRegion(void* base, uint64_t bytes) override;
  void DeregisterRegion(uint64_t key) override;
  bool ParkRegion(uint64_t key) override;
  std::optional<uint64_t> ReuseRegion(uint64_t key) override;
  void PreferRails(uint64_t key, RailTiers tiers) override;
  PeerId PeerFor(const std::string& node) override { return directory_.For(node); }
  std::string PeerName(PeerId peer) const override { return directory_.Name(peer); }
  Status Connect(PeerId peer, const std::string& address) override;
  Status Put(PeerId peer, const LocalPiece* pieces, size_t count, uint64_t remote_key, uint64_t remote_offset,
             uint32_t imm, uint64_t cookie) override;
  Status Send(PeerId peer, const void* message, size_t bytes) override;
  int event_fd() const override { return epoll_fd_; }
  void Poll(std::vector<TransportEvent>* out) override;
  bool PrepareToSleep() override;
  size_t connections() const override;
  std::vector<std::string> connected_peers() const override;
  std::map<std::string, std::string> peer_links() const override;
  TransportStats stats() const override;

 private:
  using Connection = VerbsConnection;
  using Op = PendingOp;
  using PeerState = VerbsPeerState;  // guarded by mu_

  VerbsTransport() = default;
  PeerState& Peer(PeerId peer);  // under mu_
  // Whether the peer is still in `state` at `generation`, i.e. no other dial took it since.
  bool StillCurrent(PeerId id, uint64_t generation, PeerState::State state);
  void Adopt(PeerState& p, std::vector<std::unique_ptr<Connection>> conns, PeerId peer, uint64_t incarnation,
             uint64_t dial_floor);
  void PeerDown(PeerId peer, const std::string& reason, bool never_up = false);
  void OnRegistered(uint64_t key, std::vector<ibv_mr*> mrs, Status status);
  // Tells peers the key is gone; parked (keep) or deregistered once they all acknowledged.
  void Close(uint64_t key, bool keep);
  void Announce(PeerId peer, uint64_t key, const LocalRegion& r);

  // The peer adopted on UD, through `ah` to its datagram queue pair at `remote`.
  void AdoptDatagram(PeerState& p, PeerId peer, ibv_ah* ah, const QpEndpoint& remote, uint64_t incarnation,
                     uint64_t dial_floor, uint32_t first_seq);

  std::string self_;
  uint64_t incarnation_ = 0;
  uint64_t dials_started_ = 0;  // under mu_
  std::vector<std::unique_ptr<Rail>> rails_;
  // Makes and connects RC queue pairs, without mu_; its table of receivers under mu_.
  std::unique_ptr<RcConnector> connector_;
  int epoll_fd_ = -1;
  std::unique_ptr<MemoryRegistrar> registrar_;
  Dialer dialer_;
  PeerDirectory directory_;
  // Its wake-up, written from any thread; its events under mu_ (event_outbox.h).
  std::unique_ptr<EventOutbox> outbox_;

  mutable std::mutex mu_;  // everything below
  std::deque<PeerState> peers_;  // by PeerId; a deque, so that growing it moves no PeerState
  std::unique_ptr<RegionTable> regions_;  // our group regions (registration/region_table.h)
  // Posts on the peers' RC queue pairs, and their work requests in flight (rc/rc_poster.h).
  std::unique_ptr<RcPoster> rc_;
  TransportStats stats_;
  Options options_;
  // The UD service (ud/datagram_service.h): driven under mu_, and calling back under it.
  std::unique_ptr<DatagramService> datagrams_;
  // The pool and the moves between the services (pool/move_driver.h): driven under mu_.
  std::unique_ptr<MoveDriver> moves_;
  // Every peer's line, posted on the service that carries it (peer_lines.h): driven under mu_.
  std::unique_ptr<PeerLines> lines_;
  // Every rail's completions, each settled by what it is (completion_dispatcher.h): under mu_.
  std::unique_ptr<CompletionDispatcher> completions_;
};

}  // namespace ohio
