// The progress engine's side of one group: the round state machine of a group spanning nodes
// and its exchange with the other nodes, the nonblocking calls the daemon moves for its ranks,
// the watch over a group on one node, and every store the daemon makes into the group's segment
// (rounds released, blocks published, the group's failure). What the group is and who is in it
// is the Group's (group.h), which owns this.
//
// Threading: the progress engine thread alone calls it, with one exception, AttachRankMemory,
// which the control thread calls when a rank joins (NonblockingAlltoall takes a lock for it).
// Every transport event for the group comes in here (OnLanded, OnPutDone, OnMessage,
// OnPeerDown), as outgoing work goes out from here, and reaches the exchange only through it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/engine/counters.h"
#include "daemon/engine/nonblocking_across_nodes_alltoall.h"
#include "daemon/engine/nonblocking_alltoall.h"
#include "daemon/engine/rank_memory.h"
#include "daemon/engine/staging_ledger.h"
#include "daemon/exchange/exchange.h"
#include "daemon/exchange/exchange_message.h"
#include "daemon/exchange/put_decoding.h"
#include "daemon/transport/transport.h"
#include "shm/segment.h"

namespace ohio {

class Group;

class RoundDriver {
 public:
  using Clock = std::chrono::steady_clock;

  // `group` owns this and outlives it; `segment` is its segment. A group spanning nodes
  // (`transport` not null) gets its exchange with the other nodes, planned with this node's
  // buffers until every other node's are known (SetPeer).
  RoundDriver(const Group& group, Segment* segment, uint64_t ssb_bytes, uint64_t srb_bytes,
              uint64_t min_slice_bytes, Transport* transport);
  ~RoundDriver();

  // --- the one control-thread entry ---
  // Local rank l joined: the address space the daemon moves its nonblocking calls' data from
  // and into, or why it may not (rank_memory.h).
  void AttachRankMemory(uint32_t l, RankMemoryAccess memory) { nonblocking_->Attach(l, std::move(memory)); }

  // --- setup (progress engine thread) ---
  // Whether the ranks are woken for each block of an eager round that lands (to copy it out
  // while the next steps run), or only once the round's last block is in. The engine sets it
  // from the node's CPUs: where the ranks share them with the daemon they sleep as soon as they
  // wait, and each wake-up for a part of a round is a context switch that gains nothing, the
  // copy-out competing with the daemon's next steps for the same cores (waking them once cut
  // both the context switches and the CPU per call: docs/investigations/hypercube-at-32-nodes.md
  // has the figures). Announced rounds wake them for each delivery whatever
  // this says: the daemon needs their copy-out to grant the next delivery its room.
  void set_wake_for_each_eager_block(bool wake) { wake_for_each_eager_block_ = wake; }
  // Where the wake-ups of this group's sleeping ranks are counted (DaemonCounters::ranks_woken).
  void count_ranks_woken_in(std::atomic<uint64_t>* counter) { ranks_woken_ = counter; }
  // Records what another node's daemon said of the group; publishes round 1 once all did.
  void SetPeer(uint32_t node, const PeerGroupInfo& info);

  // --- transport events for this group (groups spanning nodes) ---
  // A put from the daemon the transport knows as `peer` landed in the group's SRB.
  void OnLanded(PeerId peer, const DecodedPut& put);
  // One of this group's puts completed.
  void OnPutDone(const DecodedPut& put);
  // `peer` sent a message for the group's tag: taken if it names this group (else it was for a
  // group that has closed here); a RANK_GONE fails the group.
  void OnMessage(PeerId peer, const ExchangeMessage& m, DaemonCounters* counters);
  // The connection to `peer` broke: the group's puts to it never complete. If `peer` is one of
  // the group's nodes and the group is open, it fails with `message`; true if it failed now.
  bool OnPeerDown(PeerId peer, const std::string& message, DaemonCounters* counters);
  // The group's nodes: what PayloadBytes needs of it.
  uint32_t nodes() const;
  // A group whose ranks have gone has nothing left to send (failed: nothing left in flight).
  bool drained() const;

  // --- rounds (progress engine thread) ---
  // A group spanning nodes: moves the round state machine as far as the ranks allow; true if
  // anything changed. A group on one node has no state machine here: false.
  bool Advance(Clock::time_point now, DaemonCounters* counters);
  // A group on one node, from time to time: takes the calls its ranks counted, and fails the
  // group if some rank has kept the others waiting for longer than the timeout. True if it
  // failed the group.
  bool Watch(Clock::time_point now, DaemonCounters* counters);
  // A group on one node: moves one slice of the nonblocking calls every local rank has started
  // (NonblockingAlltoall::Advance) of at most `slice_bytes`, with staging from `ledger`; true
  // if it did anything.
  bool AdvanceNonblocking(DaemonCounters* counters, StagingLedger* ledger, uint64_t slice_bytes);
  // A group on one node with a nonblocking call being moved, or started by every rank and not
  // begun, or either.
  bool nonblocking_moving() const { return nonblocking_->moving(); }
  bool nonblocking_beginning() const {
    return !nonblocking_->moving() && nonblocking_->AllStarted(nonblocking_->next_call());
  }
  bool nonblocking_waiting() const { return nonblocking_moving() || nonblocking_beginning(); }
  // Adds to `counters` what the group's ranks counted in the segment since the last time.
  void FoldCallStats(DaemonCounters* counters);
  // Whether a round is under way, so that its timeout must be watched.
  bool busy() const;
  // Whether the group's ranks may be waiting for the engine inside a blocking call: the group
  // spans nodes (on one node its blocking calls never wait for the engine) and its latest round
  // was not a nonblocking call's. While a nonblocking call moves, its ranks compute instead.
  bool ranks_may_wait_on_engine() const;
  // A group spanning nodes some of whose ranks started a nonblocking call the others have not:
  // its timeout must be watched although no round is under way.
  bool started_calls_pending() const;

  // --- failures (progress engine thread) ---
  // Closes the group for good: every waiting and every later call gets this error.
  void Fail(Code code, const std::string& message, DaemonCounters* counters);
  // The same without counting a failure: the group ended as jobs end.
  void Close(Code code, const std::string& message);
  // Local rank l left (clean) or its connection closed. If it is inside a round, or (for a
  // group across nodes) its connection closed, the group fails now, on every node of the
  // group; otherwise the round under way completes without it and the group fails when
  // another rank starts a round that would need it. Returns the failure if it was immediate.
  // `clean`: it said LeaveGroup (else its connection closed).
  std::optional<std::string> Depart(uint32_t l, const std::string& why, bool clean, DaemonCounters* counters);
  // Another node said the group failed there (GroupFailed): failed here with its code and
  // reason, and not told back.
  void FailedOnNode(const std::string& node, const Status& why, DaemonCounters* counters);
  // True once, for a group spanning nodes that has failed here for a reason of this node's own:
  // its other nodes must be told (PeerBootstrap::TellFailed), or they would wait for it until
  // their own timeout. Not for a failure another node told (GroupFailed, RANK_GONE), one this
  // node tells every node otherwise (RANK_GONE sent), nor a round's timeout (every node has
  // its own).
  bool TakeFailureToTell();

 private:
  enum class Phase { kFilling, kReleased };

  bool spans_nodes() const { return exchange_ != nullptr; }
  bool failed() const;
  uint32_t local_ranks() const;
  // Node `node` of the group said that its rank `rank` departed and closed the group there
  // (RANK_GONE): the calls here can never complete, so the group fails now, naming that rank,
  // instead of at the timeout.
  void RankGoneOnNode(uint32_t node, uint32_t rank, bool left, DaemonCounters* counters);
  bool RankIdle(uint32_t l) const;
  bool ArrivedAt(uint32_t l, uint32_t round) const;
  void FailNotEntered(const std::vector<uint32_t>& missing, uint32_t round, DaemonCounters* counters);
  // Starts the round once every local rank has arrived (or fails the group); true if it did.
  bool Begin(Clock::time_point now, DaemonCounters* counters);
  bool AdvanceExchange(Clock::time_point now, DaemonCounters* counters);
  // Publishes finished_round as far as the rounds behind allow; true if it moved.
  bool PublishFinished();
  // The stage report's stamps of the round under way (shm/round_stamps.h).
  void StampSends();
  void StampLanded();
  bool FinishRound(Clock::time_point now, DaemonCounters* counters);
  // Groups spanning nodes: the daemon's part in the nonblocking calls its ranks started
  // (nonblocking_across_nodes_alltoall.h), failing the group if it could not play it. True if anything
  // changed.
  bool FillNonblocking(Clock::time_point now, DaemonCounters* counters);
  bool DrainNonblocking(DaemonCounters* counters);
  void FailNonblocking(const Status& why, DaemonCounters* counters);
  void Notify();
  void PublishRoundError(Code code, const std::string& message);
  std::string DescribeLocals(const std::vector<uint32_t>& locals) const;

  const Group& group_;
  Segment* segment_;
  const std::chrono::milliseconds timeout_;
  bool wake_for_each_eager_block_ = true;
  std::atomic<uint64_t>* ranks_woken_ = nullptr;
  uint64_t plan_min_slice_bytes_ = 0;  // the group's: the smallest of every node's met so far
  std::unique_ptr<Exchange> exchange_;  // null for a group on one node
  // Nonblocking calls the ranks started: moved by nonblocking_ alone on one node, by
  // across_nodes_nonblocking_ through the rounds across nodes.
  std::unique_ptr<NonblockingAlltoall> nonblocking_;
  std::unique_ptr<NonblockingAcrossNodesAlltoall> across_nodes_nonblocking_;
  uint32_t published_delivered_ = 0;
  std::vector<std::string> departed_;  // why each local rank left, "" while it is here
  std::vector<bool> departed_clean_;   // it said LeaveGroup

  uint32_t round_ = 1;
  Phase phase_ = Phase::kFilling;
  bool round_failed_ = false;
  bool latest_round_nonblocking_ = false;  // the round under way, or else the last, moved a nonblocking call
  bool failure_told_ = false;  // TakeFailureToTell said true, or a peer told it
  std::optional<Clock::time_point> waiting_since_;  // first arrival of the current round
  std::optional<Clock::time_point> call_started_;   // first arrival of the call's first round
  Clock::time_point released_at_;

  // A group on one node (Watch): the round some rank waits at since when, and the ranks'
  // call counters as last folded.
  uint32_t watched_round_ = 0;
  Clock::time_point watched_since_;
  struct FoldedStats {
    uint64_t calls = 0, failed = 0, rounds = 0, bytes_local = 0;
    uint64_t failed_by_code[16] = {};
    uint64_t latency_count[kLatencySizeClasses][kLatencyBuckets] = {};
    uint64_t latency_sum_ns[kLatencySizeClasses] = {};
    uint64_t handed_back[kHandedBackFunctions][kHandBackReasons] = {};
  } folded_;
};

}  // namespace ohio
