// One group's inter-node exchange on this node, round by round; progress engine thread only.
//
// Eager rounds (shm/eager_plan.h: the call fits half of every SRB): when this node's ranks have
// all arrived, it puts its block to every other node at once, header first (round, M), into
// that node's slot of the SRB half of the round's parity. Receiving a peer's round k is the
// credit for sending it round k+1. Every node learns every node's M from the headers; a node
// whose own ranks disagree or opted out sends ROUND_READY (with the reason) instead of data.
// Blocks whose header carries this node's M are published to the ranks as they land; once
// every node's M is known, a disagreement is the round's error on every node.
//
// Announced rounds (everything larger): when this node's ranks have all arrived, it sends
// ROUND_READY (with its M) to every other node; once it holds every node's, it knows whether
// all agree and, if so, posts its puts (PlanPuts) into the peers' SRBs as credits allow, while
// peers' puts land in its own SRB and are published in delivery order. With v3 a delivery
// d >= 2 reuses the half of d-2: its sender may put it only after this node's ranks have copied
// d-2 out and this node has sent a CREDIT. ROUND_READY also grants deliveries 0 and 1 (v3) or
// all of them (v1, v2: the SRB holds the whole round).
//
// From an announced round to an eager one, the SRB held the whole announced round: each node
// sends ROUND_READY for the eager round too, and puts only once it holds the peer's.
//
// Direct rounds (the leader table chooses it for the call's M, shm/leader_choice.h): eager or
// announced rounds whose puts go as pairwise ones do, but never more than the table's
// direct_window (ohiod's direct-window) in flight from this node at once, which bounds what any
// node receives at once.
//
// Hypercube rounds (the leader table chooses it for the call's M and it fits, see
// RoundLeader): eager rounds whose node exchange is shm/bruck_plan.h's: in step k this
// node sends one message (header first, from eager_out) to node + 2^k (XOR 2^k for a power
// of two), gathered from its SSB half and from the inboxes of earlier steps, into that node's
// inbox k; it sends step k once inboxes 0..k-1 have landed. Blocks are published as their
// inbox lands (its header carries this node's M). All inboxes landed means every node had
// arrived at the round, which is the credit for the next one. The round completes only once this node's messages have left:
// they read inboxes that the round after next overwrites. A sign that not every node runs
// the hypercube with this M (ExchangeMessage::kReadyMixed) turns the round into one where
// every node tells every node its M, and the verdict is taken as in announced rounds.
//
// Alltoallv rounds (M = kVectorBytes, shm/vector_plan.h) are eager rounds whose puts and
// deliveries are planned from this node's count tables when the call's first round begins (and
// kept while the counts stay the same: a loop of alltoallv calls plans once); its header
// carries the node's share of the count digest and, when the node's part does not fit one
// round, kEagerVectorStaged and the stream rounds its part needs. Blocks are published only once
// every node's share is in and they sum to zero: a pair that disagrees fails the round on every
// node before any rank copies a block out: each node then puts its count tables over its block
// in every peer's slot, and the round fails once all are in, on every node naming the same
// first pair that disagrees (shm/vector_disagreement.h). A node whose part did not fit sent
// its stream round 0; the others sent their whole part. If any did not fit, the call goes on in
// as many stream rounds as the most those nodes need, less the first (shm/vector_staging.h),
// planned from the first round's counts, in which only they put data; the ranks learn how many
// from the segment (vector_streamed), and which nodes stream from the headers in their SRB. A node whose part would take more than kMaxVectorStreamRounds
// sends ROUND_READY (kReadyTooLarge) instead, and the call is not supported on any node.
//
// An alltoallv's first round runs as a hypercube (shm/vector_cube.h) when the leader table runs
// hypercubes for the group (whatever N: XOR pairing or the rotation, as for an alltoall) and the
// call before ended with every
// node's part fitting one (every node learns that alike: from a hypercube call's sums, or from
// the flags of every header of a pairwise call's first round): its messages carry their blocks'
// sizes, and the count digest and a "does not fit" flag are summed along them. Blocks are
// published only once the last inbox landed; if the sum or the flag says the call cannot be
// read, the ranks learn it goes again (kVectorCallGoesAgain), and it does, as a pairwise call.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/exchange/exchange_message.h"
#include "daemon/exchange/wire.h"
#include "daemon/transport/transport.h"
#include "shm/bruck_plan.h"
#include "shm/eager_plan.h"
#include "shm/exchange_plan.h"
#include "shm/leader_choice.h"
#include "shm/segment.h"
#include "shm/vector_cube.h"
#include "shm/vector_plan.h"

namespace ohio {

struct PeerGroupInfo {
  uint32_t tag = 0;
  uint64_t srb_key = 0;     // the registered region that holds its SRB
  uint64_t srb_offset = 0;  // where the SRB starts in that region
  uint64_t ssb_bytes = 0;
  uint64_t srb_bytes = 0;
  uint64_t min_slice_bytes = 0;  // its minimum slice (0 from a daemon that predates it)
  bool opened = false;  // its side of the group is set up (peer_bootstrap.h), as it answered then
};

class Exchange {
 public:
  // `segment` is the group's on this node: eager puts gather their header from it and land
  // their blocks in its SRB; `tag` is the group's tag here (what peers' messages carry);
  // `leaders` chooses the leader algorithm per call (the same table on every node).
  Exchange(const GroupShape& shape, uint32_t node, Algorithm algo, std::vector<std::string> node_names,
           std::array<uint8_t, 16> key, uint64_t ssb_bytes, uint64_t srb_bytes, Transport* transport,
           const Segment* segment, uint32_t tag, LeaderTable leaders);

  // --- bootstrap ---
  void SetPeer(uint32_t node, const PeerGroupInfo& info);
  bool bootstrapped() const { return known_peers_ + 1 == shape_.nodes(); }
  uint64_t plan_ssb_bytes() const { return plan_ssb_; }
  uint64_t plan_srb_bytes() const { return plan_srb_; }
  // The group's node whose daemon the transport knows as `peer`.
  std::optional<uint32_t> NodeIndex(PeerId peer) const;
  const std::string& node_name(uint32_t n) const { return node_names_[n]; }

  // --- rounds ---
  // This node's ranks are all in for `round` (the round after the last one ended): M agreed
  // locally unless local_disagree or local_skip.
  void BeginRound(uint32_t round, uint64_t bytes_per_rank, bool local_disagree, bool local_skip,
                  uint64_t round_in_call);
  // The round is over here (complete()): the next one may begin.
  void EndRound();
  void OnMessage(uint32_t from, const ExchangeMessage& m);
  // RANK_GONE to every other node: group rank `rank` of this node departed and the group is
  // closed here. Nodes not met yet are told as they are met (SetPeer): one may have met this
  // node already, from its side, and would otherwise wait for the rank until its timeout.
  void TellRankGone(uint32_t rank, bool left);
  // TellRankGone was called: every other node learns the group's end from it.
  bool told_rank_gone() const { return rank_gone_.has_value(); }
  // A put from node `from` landed; `delivery` is its immediate's delivery field.
  void OnArrived(uint32_t from, uint32_t delivery);
  void OnPutDone(uint64_t cookie);
  // Posts what credits allow and sends credits for what the ranks consumed. True if anything
  // changed.
  bool Progress(uint32_t consumed_by_all);

  bool eager() const { return eager_; }
  // The leader algorithm of the eager round under way.
  Leader leader() const { return leader_; }
  // Rounds of the current alltoallv call, once its first round's verdict is in (1 until then).
  uint32_t vector_rounds_in_call() const { return vector_rounds_in_call_; }
  // Bytes the current alltoallv call moves between this node's own ranks.
  uint64_t vector_local_bytes() const { return vector_plan_.local_bytes; }
  // Bytes the current alltoallv call's ranks on this node send, to every node.
  uint64_t vector_sent_bytes() const { return vector_plan_.sent_bytes; }
  // Deliveries of the current round landed (announced) or landed and published (eager) so
  // far, in order.
  uint32_t delivered() const { return delivered_; }
  // Set once the round cannot succeed (ranks on different nodes disagree on M).
  const std::optional<std::string>& error() const { return error_; }
  Code error_code() const { return error_code_; }
  // Every put of the round has been posted (an announced round: and has left) and every
  // delivery has landed, or the round failed and every node's M is known.
  bool complete() const;
  // Puts of rounds of this parity that have not left yet.
  uint32_t in_flight(uint32_t round) const { return in_flight_[round & 1]; }
  size_t puts_in_flight() const { return in_flight_[0] + in_flight_[1]; }
  // Puts of the current round not yet posted, or posted and not yet left: a group whose ranks
  // have all gone must still send them, or its peers would wait for them forever.
  bool sends_pending() const { return (active_ && !error_ && posted_ < puts_->size()) || puts_in_flight() != 0; }
  // The connection to `peer` broke: puts to it will never complete.
  void ForgetPutsTo(PeerId peer);
  // Every put of the current round has been posted.
  bool all_posted() const { return active_ && posted_ == puts_->size(); }
  // Every delivery of the current round has landed (and, eager, was published).
  bool all_delivered() const { return active_ && delivered_ == deliveries_->size(); }
  // For the stage report (shm/round_stamps.h), of the current eager round's peers: the latest
  // time one began it, and the mean of (landed here - began there) over them. Zeros when no
  // peer's block landed.
  void PeerTimes(uint64_t* latest_begun_ns, uint64_t* mean_trip_ns) const;
  // Who this node still waits on, for timeout messages.
  std::string Waiting() const;

  // The put cookie's fields (wire.h), as the progress engine reads a completion's.
  static uint32_t CookieTag(uint64_t cookie) { return put_cookie::Tag(cookie); }
  static bool CookieIsEager(uint64_t cookie) { return put_cookie::IsEager(cookie); }
  static bool CookieIsTables(uint64_t cookie) { return put_cookie::IsTables(cookie); }
  static bool CookieIsVectorCube(uint64_t cookie) { return put_cookie::IsVectorCube(cookie); }

 private:
  // What a peer said of one round: kept for this round and the next (a peer is at most one
  // round ahead: it cannot finish a round without this node's part).
  struct Heard {
    uint32_t round = 0;
    bool known = false;  // its M and flags, from ROUND_READY or an eager header
    uint64_t bytes_per_rank = 0;
    bool disagree = false;
    bool skipped = false;
    bool data = false;     // its eager put for the round landed
    uint64_t begun_ns = 0;   // from its eager header: when it began the round (its clock)
    uint64_t landed_ns = 0;  // when its eager put was seen here
    uint32_t credit = 0;   // announced v3: deliveries it granted + 1
    bool too_large = false;   // alltoallv: its part would take too many rounds
    uint64_t count_digest = 0;  // alltoallv: its share, from its eager header
  bool cube_fits = false;     // alltoallv: its part would fit a hypercube (kEagerVectorCubeFits)
    bool staged = false;        // alltoallv: its part does not fit one round (kEagerVectorStaged)
    uint32_t stream_rounds = 0;  // alltoallv: the stream rounds its part needs
    bool mixed = false;          // its ROUND_READY said kReadyMixed
    bool tables = false;         // alltoallv: its count tables landed in its slot (kEagerVectorTables)
  };
  Heard& HeardOf(uint32_t node, uint32_t round);
  // What the header of a put from `from` (eager slot or hypercube inbox) says of its round.
  Heard& HearHeader(uint32_t from, const EagerHeader& h);
  // Records a message about `round` from `node`; false if the round is already over here.
  bool Accept(uint32_t node, uint32_t round);
  void CheckAgreement();
  // Plans this node's part of the alltoallv round under way.
  void PlanVectorRound();
  // The verdict of an alltoallv round whose nodes all passed it: which nodes' parts would take
  // too many rounds, whether the count digests sum to zero, and (the call's first round) how
  // many stream rounds follow: `max_stream_rounds` - 1 if any node's part is `staged` (the first
  // round carried stream round 0).
  void VectorVerdict(const std::vector<uint32_t>& too_large, uint64_t digest_sum, bool staged,
                     uint32_t max_stream_rounds, bool all_cube_fit);
  // Alltoallv whose digest failed: puts this node's count tables to every peer once the round's
  // puts have left; then, once every node's are in, names the first pair that disagrees.
  bool PostVectorTables();
  void NameVectorPair();
  void SendReady(bool disagree, bool skipped, uint32_t reason = 0);
  // Hypercube alltoallv rounds.
  bool vector_cube() const { return vector_ && hypercube(); }
  Leader VectorLeader() const;
  void PlanVectorCubeRound();
  // Step k's message: its header line and size table written into the segment, its pieces
  // gathered from the round's SSB half `ssb` and SRB half `srb`.
  void GatherVectorCube(uint32_t k, const uint8_t* ssb, const uint8_t* srb);
  // Once every inbox has landed: whether the ranks may read the call or it goes again.
  void VectorCubeVerdict();
  // Hypercube rounds.
  void PlanHypercubeRound();
  void OnHypercubeArrived(uint32_t from, uint32_t parity);
  // Reads inbox k's header once its message landed; false if the message is not (yet) the
  // round's.
  bool ReadInbox(uint32_t k);
  bool PostHypercube();
  void PublishHypercube();
  // Signs that not every node runs this round as a hypercube with this M: what was heard of
  // the round so far, and pairwise eager puts seen in its SRB half. If any, tells every node
  // this node's M (kReadyMixed), once a round.
  void ReactToMixedSigns();
  bool MixedSign(uint32_t node) const;
  void SendTo(uint32_t node, ExchangeMessage m);
  bool EagerCredit(uint32_t node) const;
  // Direct rounds: the window is full.
  bool DirectWindowFull() const;
  bool PostEager();
  bool PostAnnounced();
  void PublishEager();
  void Post(const Put& p, uint32_t index, bool eager);

  const GroupShape& shape_;
  const uint32_t node_;
  const Algorithm algo_;
  const std::vector<std::string> node_names_;
  std::vector<PeerId> peer_ids_;  // by node: the transport's id for its daemon
  const std::array<uint8_t, 16> key_;
  Transport* transport_;
  const Segment* segment_;
  const uint32_t tag_;
  const LeaderTable leaders_;
  std::vector<std::optional<PeerGroupInfo>> peers_;
  uint32_t known_peers_ = 0;
  std::optional<ExchangeMessage> rank_gone_;  // told to every node met from now on
  uint64_t plan_ssb_;
  uint64_t plan_srb_;
  EagerLayout layout_;  // once bootstrapped
  std::vector<std::pair<uint32_t, uint32_t>> early_;  // (node, delivery) of puts that landed before

  // Per node, by round parity; and the last round each node said anything about, and the last
  // it announced (ROUND_READY).
  std::vector<std::array<Heard, 2>> heard_;
  std::vector<uint32_t> last_heard_;
  std::vector<uint32_t> last_ready_;

  uint32_t round_ = 1;  // the round under way, or the next one
  bool active_ = false;
  bool eager_ = false;
  bool after_announced_ = false;  // the round before succeeded as an announced round
  bool after_hypercube_ = false;  // the round before completed as a hypercube: every node had arrived
  bool announced_ok_ = false;     // this round, announced, has succeeded so far
  uint64_t bytes_per_rank_ = 0;
  bool local_disagree_ = false;
  bool local_skip_ = false;
  Code error_code_ = Code::kSizeMismatch;
  bool agreed_ = false;  // every node's M is known and the verdict taken
  bool vector_ = false;     // an alltoallv round
  bool too_large_ = false;  // alltoallv: this node's part would take too many rounds
  uint32_t vector_part_ = 0;  // alltoallv: the round's index in its call (0: the counts' check)
  uint32_t vector_rounds_in_call_ = 1;
  std::vector<bool> staged_nodes_;  // alltoallv: by node, its part did not fit the first round
  uint64_t count_digest_ = 0;
  bool naming_pair_ = false;   // alltoallv: the digest failed, the tables travel (no error yet)
  bool tables_posted_ = false;
  std::optional<std::string> error_;

  Leader leader_ = Leader::kPairwise;  // of the round under way
  bool hypercube() const { return leader_ == Leader::kHypercube; }
  // Hypercube rounds.
  bool ready_sent_ = false;        // this node told every node its M this round
  bool hypercube_halted_ = false;  // a node runs another M: no more messages this round
  std::array<bool, 2> pairwise_eager_seen_{};  // by parity: a pairwise eager put landed
  std::array<uint32_t, 2> early_inboxes_{};   // by parity: inboxes whose put landed before the round began
  std::vector<bool> inbox_landed_;
  uint32_t inboxes_landed_ = 0;
  uint32_t inbox_prefix_ = 0;  // inboxes 0..inbox_prefix_-1 have all landed
  struct HypercubePlanCache {
    uint64_t bytes_per_rank = ~uint64_t{0};
    std::vector<Put> puts;  // one per step: dest, srb_offset of the inbox's header, no pieces
    std::vector<std::vector<BruckPiece>> gathers;  // by step
    std::vector<Delivery> deliveries;
  } hypercube_plan_;

  // The puts of the round: planned once per M (eager) or per round (announced).
  struct EagerPlanCache {
    uint64_t bytes_per_rank = ~uint64_t{0};
    std::vector<Put> puts;
    std::vector<Delivery> deliveries;
  } eager_plan_;
  VectorRoundPlan vector_plan_;  // kept while the counts stay the same
  // Hypercube alltoallv: the largest block it carries (0: never), whether the group's next
  // alltoallv tries it (the same on every node), whether this node's part of the call under
  // way fits it, what the inboxes said (its own blocks are vector_plan_'s puts, by destination).
  uint64_t cube_block_cap_ = 0;
  bool vector_cube_next_ = true;
  bool vector_cube_fits_ = false;
  VectorCubeInboxes cube_inboxes_;
  std::vector<Put> cube_puts_;  // one per step: dest, srb_offset of the inbox, no pieces
  std::vector<Delivery> cube_deliveries_;
  std::vector<Put> stream_puts_;  // alltoallv: the stream round under way
  std::vector<Delivery> stream_deliveries_;
  std::vector<Put> announced_puts_;
  std::vector<Delivery> announced_deliveries_;
  const std::vector<Put>* puts_ = &announced_puts_;
  const std::vector<Delivery>* deliveries_ = &announced_deliveries_;
  std::vector<LocalPiece> pieces_;  // one put's gather list, reused so that a put allocates nothing
  std::vector<bool> put_posted_;
  uint32_t posted_ = 0;
  std::array<uint32_t, 2> in_flight_{};  // by round parity
  std::vector<bool> arrived_;            // announced: by delivery
  uint32_t delivered_ = 0;
  uint32_t credited_ = 0;  // announced: deliveries this node has granted so far this round
};

}  // namespace ohio
