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
// One lock and one table of peers hold it together; its methods are split by job:
// verbs_transport.cc (start, stop, statistics), verbs_connecting.cc (dials, queue pair state,
// a peer lost), verbs_registration.cc (the group regions and the parked ones), verbs_posting.cc
// (puts, sends and each peer's line), verbs_completions.cc (polling the completion queues,
// what arrived), verbs_datagrams.cc (the UD service) and verbs_moving.cc (the pool and moves).
// The parts are packages of their own: rc/ (queue pairs and their receive rings, the work
// requests in flight, gather lists, a peer's RC state), ud/ (the datagram queue pair, a peer's
// datagram link and its reliability), pool/ (the pool plan, a peer's seat in it and its move
// between the services, both decided apart from doing) and registration/ (the registrar thread
// and the bounce slots).
//
// Locks: mu_ guards the table of peers (every part of a PeerState), the regions and the state
// below it; the registrar's own lock guards its queue of jobs only. The order is
//   mu_  ->  MemoryRegistrar::mu_
// (Register and Deregister are called under mu_; the registrar calls OnRegistered, which takes
// mu_, with its own lock released), never the other way.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/log_rate_limiter.h"
#include "daemon/transport/peer_directory.h"
#include "daemon/transport/transport.h"
#include "daemon/transport/verbs/move_notice.h"
#include "daemon/transport/verbs/pending_op.h"
#include "daemon/transport/verbs/pool/peer_move.h"
#include "daemon/transport/verbs/pool/pool_seat.h"
#include "daemon/transport/verbs/pool/rc_pool_plan.h"
#include "daemon/transport/verbs/rc/in_flight_table.h"
#include "daemon/transport/verbs/rc/queue_pair.h"
#include "daemon/transport/verbs/rc/rc_peer.h"
#include "daemon/transport/verbs/rc/transition_retry.h"
#include "daemon/transport/verbs/rc/verbs_connection.h"
#include "daemon/transport/verbs/registration/bounce_pool.h"
#include "daemon/transport/verbs/registration/memory_registrar.h"
#include "daemon/transport/verbs/ud/datagram_source.h"
#include "daemon/transport/verbs/ud/ud_peer_link.h"
#include "daemon/transport/verbs/ud/ud_queue_pair.h"
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
  static constexpr std::chrono::milliseconds kRtrRetryBudget = kLongestRtrRetryBudget;

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
  // One peer node, in parts each owned by the part of the transport that reads it; the whole
  // guarded by mu_.
  struct PeerState {
    // Its dial (verbs_connecting.cc). kAccepting: a dial of the peer's is being connected here
    // (Accept, without the lock).
    enum class State { kIdle, kDialing, kAccepting, kConnected };
    State state = State::kIdle;
    uint64_t generation = 0;   // bumped whenever its connections are replaced or dropped
    uint64_t incarnation = 0;  // of the peer daemon these connections go to
    uint64_t dial_floor = 0;   // its dials numbered up to this are stale
    std::deque<Op> pending;    // its line: work waiting for a connection or resources
    RcPeer rc;                        // over RC: queue pairs, its regions (rc/rc_peer.h)
    std::unique_ptr<UdPeerLink> ud;   // over UD: its datagram link (ud/ud_peer_link.h)
    PoolSeat pool;                    // its place in the RC pool, its traffic (pool/pool_seat.h)
    PeerMove move;                    // a move between the services (pool/peer_move.h)
  };
  struct LocalRegion {
    // kParked: its key is dead to every peer (all acknowledged), its registration kept.
    enum class State { kPending, kRegistered, kClosing, kParked };
    State state = State::kPending;
    uint8_t* base = nullptr;
    uint64_t bytes = 0;
    std::vector<ibv_mr*> mrs;  // per rail, once registered
    bool registration_failed = false;  // bounce buffers only, for good
    std::set<std::pair<PeerId, size_t>> acks_waiting;  // (peer, rail) while closing
    bool keep_registration = false;  // closing to be parked, not deregistered
    RailTiers rail_tiers;  // the group's preferred rails (PreferRails); none: spread by key
    // A peer's bytes may still land in it (a bounce put, a datagram): its group has not closed.
    bool Writable() const { return state == State::kPending || state == State::kRegistered; }
  };

  VerbsTransport() = default;
  static TransportEvent Event(TransportEvent::Kind kind, PeerId peer);
  PeerState& Peer(PeerId peer);  // under mu_
  // A new queue pair and receive ring on `rail`, numbered so that its receives find it.
  Result<std::unique_ptr<Connection>> MakeConnection(size_t rail);
  // Whether the peer is still in `state` at `generation`, i.e. no other dial took it since.
  bool StillCurrent(PeerId id, uint64_t generation, PeerState::State state);
  // Moves `conns` (not adopted yet; without mu_) to RTR and RTS against the peer's endpoints of
  // the same rails, RTR retried within the RTR budget for all of them, retries counted in
  // rtr_retries_. The error names the rail and both ends.
  Status ConnectRails(const std::vector<std::unique_ptr<Connection>>& conns, const std::vector<QpEndpoint>& remote,
                      const std::string& peer);
  void Adopt(PeerState& p, std::vector<std::unique_ptr<Connection>> conns, PeerId peer, uint64_t incarnation,
             uint64_t dial_floor);
  void PeerDown(PeerId peer, const std::string& reason, bool never_up = false);
  // Why a send on `rail` to a peer failed, naming both ends of the rail when the peer answers
  // on another rail (so it is alive and this rail is what does not reach).
  std::string SendFailure(const PeerState& p, const std::string& peer_name, size_t rail, ibv_wc_status status) const;
  void OnRegistered(uint64_t key, std::vector<ibv_mr*> mrs, Status status);
  // Tells peers the key is gone; parked (keep) or deregistered once they all acknowledged.
  void Close(std::map<uint64_t, LocalRegion>::iterator it, bool keep);
  void FinishClosing(uint64_t key);
  void Announce(PeerId peer, uint64_t key, const LocalRegion& r);
  void EnqueueControl(PeerId peer, uint32_t type, uint64_t key, std::string payload, int rail);
  void Flush(PeerId peer);
  // Each false when out of resources for now (or the peer went down posting).
  bool PostOp(PeerId peer, PeerState& p, Op& op);
  bool PostControl(PeerId peer, PeerState& p, uint32_t type, uint64_t key, const void* payload, size_t bytes,
                   int rail);
  bool PostPut(PeerId peer, PeerState& p, Op& op, const LocalPiece* pieces, size_t count);
  // Work requests PostWrites makes of sges_ on c: one per max_sge entries, at least one.
  size_t WritesFor(const Connection& c) const;
  // Posts sges_ on c as RDMA WRITEs to remote_at (rkey), each work request tracked as `each`;
  // with `imm`, the last one carries it and completes the put. False if posting failed (the
  // peer is then down).
  bool PostWrites(PeerId peer, Connection& c, uint64_t remote_at, uint32_t rkey, InFlight each,
                  std::optional<uint32_t> imm);
  // A large put to a peer on several rails: first the stripes, one per rail, all at once (the
  // op then waits first in the peer's line), then, once they are acknowledged, the closing
  // zero-byte write with the immediate on the put's own rail.
  bool PostStriped(PeerId peer, PeerState& p, Op& op, const LocalRegion* local, const RemoteRegion* remote,
                   const LocalPiece* pieces, size_t count);
  // A SEND of header h and bytes [from, from + n) of the pieces, through a bounce slot.
  bool PostSend(PeerId peer, PeerState& p, size_t rail, const VerbsWireHeader& h, const LocalPiece* pieces,
                size_t count, uint64_t from, uint64_t n, InFlight f);
  int PollCompletions();  // the completions handled
  // When the completions being handled were polled: what a datagram's acknowledgement is timed
  // by (one clock reading a poll, not one a datagram).
  UdClock::time_point poll_now_;
  void OnCompletion(const ibv_wc& wc);
  void OnReceive(PeerId peer, PeerState& p, size_t rail, const uint8_t* data, uint32_t bytes);
  const LocalRegion* FindRegistered(const LocalPiece* pieces, size_t count) const;
  // The rail of every put to the peer's region `key`, chosen at the first from the rail tiers
  // of our region the put reads from (registered or not), then kept.
  size_t PutRail(PeerState& p, uint64_t key, const LocalPiece* pieces, size_t count);
  void Emit(TransportEvent e);

  // The UD service (verbs_datagrams.cc). Peers holding an RC queue pair, or about to.
  uint32_t RcPeersHeld() const;  // under mu_
  // Address handles for a peer's datagram queue pairs (without mu_), and the peer adopted on UD.
  Result<ibv_ah*> DatagramAddress(const std::vector<QpEndpoint>& remote, const std::string& peer);
  void AdoptDatagram(PeerState& p, PeerId peer, ibv_ah* ah, const QpEndpoint& remote, uint64_t incarnation,
                     uint64_t dial_floor, uint32_t first_seq);
  std::vector<QpEndpoint> DatagramEndpoints() const;
  // Each false when out of room for now (window, send slots, send queue) or the peer went down.
  bool PostDatagramPut(PeerId peer, PeerState& p, Op& op, const LocalPiece* pieces, size_t count);
  // Staged on the datagram queue pair (UdQueuePair::Stage): the caller posts them.
  bool PostDatagram(PeerId peer, PeerState& p, UdWireHeader h, const LocalPiece* pieces, size_t count,
                    uint64_t from, uint32_t n, UdClock::time_point now);
  void SendAck(PeerState& p);
  void OnDatagramCompletion(const ibv_wc& wc);
  void OnDatagram(PeerId peer, PeerState& p, const UdWireHeader& h, const uint8_t* payload, uint32_t n);
  void ReleaseHeld(PeerId peer, PeerState& p);
  // Forgets peer `peer`'s datagram link: its send slots, its entry by sender, its tending.
  void DropDatagramLink(PeerId peer, PeerState& p);
  // A link to the peer's datagram queue pair at `remote`: ours starts at `first_sent`, its at
  // remote.psn; the peer's datagrams are taken from then on.
  void MakeDatagramLink(PeerState& p, PeerId peer, ibv_ah* ah, const QpEndpoint& remote, uint32_t first_sent);
  // Acknowledgements due, retransmissions due, peers that stopped answering; the timer armed for
  // the next retransmission. Every pass and before sleeping.
  void TendDatagrams(std::chrono::steady_clock::time_point now);
  // Before sleeping: the timer set to wake the engine for the next retransmission (disarmed with
  // nothing in flight); false when an acknowledgement is still to be sent, so not to sleep.
  bool ArmDatagramTimer();
  void Wake();  // from threads other than the engine's, which may be asleep

  // Moves between the services (verbs_moving.cc): the pool planned from the interval's traffic,
  // the moves it asks for started, the notices of both ends, and the switch at each end.
  void PlanPool(std::chrono::steady_clock::time_point now);
  void TendMoves(std::chrono::steady_clock::time_point now);
  // Nothing of ours to the peer is in flight, and the line's first op (if any) is not begun.
  bool Drained(PeerId peer, const PeerState& p) const;
  void SendMoveNotices(PeerId peer, PeerState& p, const MoveNotice& notice, bool front);
  void OnMoveNotice(PeerId peer, PeerState& p, const MoveNotice& notice);
  void OnMoveNoticePosted(PeerState& p);
  void AnswerMove(PeerId peer, PeerState& p, const MoveNotice& notice);
  void AbandonMove(PeerState& p);
  // The switch: from the starter's side once the answer is in (`remote`: the peer's new
  // endpoints), from the other side once the first op on the new service arrives.
  void FinishMoveToRc(PeerId peer, PeerState& p, const std::vector<QpEndpoint>* remote);
  void FinishMoveToUd(PeerId peer, PeerState& p, const QpEndpoint* remote);
  // The RC queue pairs dropped (a move to UD, or a move to RC abandoned), and what they held.
  void DropRcConnections(PeerId peer, PeerState& p);
  // Our closing regions stop waiting for the peer's acknowledgements: it can write nothing more
  // into them (gone, or done with RC).
  void ForgetPeerInClosing(PeerId peer);

  std::string self_;
  uint64_t incarnation_ = 0;
  uint64_t dials_started_ = 0;  // under mu_
  std::vector<std::unique_ptr<Rail>> rails_;
  std::vector<std::unique_ptr<BouncePool>> pools_;  // per rail
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::unique_ptr<MemoryRegistrar> registrar_;
  Dialer dialer_;
  PeerDirectory directory_;
  // Set after wake_fd_ is written: Poll reads the eventfd only then, not on every pass.
  std::atomic<bool> woken_{false};
  std::atomic<uint64_t> rtr_retries_{0};  // counted outside mu_, by ConnectRails

  mutable std::mutex mu_;  // everything below
  std::deque<PeerState> peers_;  // by PeerId; a deque, so that growing it moves no PeerState
  std::map<uint64_t, LocalRegion> regions_;
  std::map<uint8_t*, uint64_t> registered_by_base_;  // registered regions, to find a put's source
  // set_rtr_retry_budget's, read by dials without the lock.
  std::atomic<int64_t> rtr_retry_budget_ms_{kRtrRetryBudget.count()};
  uint64_t next_key_ = 1;
  InFlightTable in_flight_;
  std::vector<ibv_sge> sges_;         // one put's gather list, reused
  std::vector<ibv_send_wr> wrs_;      // one put's work requests, reused
  std::map<uint32_t, std::pair<PeerId, size_t>> receivers_;  // connection serial -> peer, rail
  std::atomic<uint32_t> next_serial_{1};
  std::vector<TransportEvent> events_;
  bool polling_ = false;  // inside Poll or PrepareToSleep: events go out with it, no wake-up needed
  std::chrono::steady_clock::time_point last_keepalive_;
  TransportStats stats_;
  // The UD service: a datagram queue pair per rail, peers by where their datagrams come from
  // (queue pair number, and source GID or LID), the pool's bound, the retransmission timer.
  Options options_;
  std::vector<std::unique_ptr<UdQueuePair>> datagram_qps_;
  DatagramSenders datagram_senders_;
  // Datagrams refused because no peer could be told as their sender (datagram_source.h).
  LogRateLimiter unidentified_datagram_log_{std::chrono::seconds(10), 5};
  int timer_fd_ = -1;
  // The UD peers with datagrams unacknowledged or an acknowledgement to send: what each pass
  // tends and the timer is armed for. The rest have nothing to do, and at thousands of nodes
  // walking every peer on every pass would cost more than the datagrams.
  std::set<PeerId> datagram_peers_to_tend_;
  // The pool, planned every rc_pool_interval from what was sent to each peer.
  std::unique_ptr<RcPoolPlan> pool_plan_;
  std::chrono::steady_clock::time_point last_plan_;
  // Which datagrams drop_one_datagram_in drops: at random, not every n-th, which a sender's
  // retransmissions could meet in step every time.
  std::mt19937 drop_chance_{std::random_device{}()};
};

}  // namespace ohio
