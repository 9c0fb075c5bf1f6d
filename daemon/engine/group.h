// One group (communicator) as this node's daemon sees it: the shared segment its local ranks
// map, the doorbell they ring, who is attached, and the round state machine that the progress
// engine drives. Membership is changed by the control thread under the registry's lock; the
// round state and every store into the segment belong to the progress engine thread alone.
#pragma once

#include <sys/types.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/engine/counters.h"
#include "daemon/engine/group_spec.h"
#include "daemon/engine/nonblocking_across_nodes_alltoall.h"
#include "daemon/engine/nonblocking_alltoall.h"
#include "daemon/engine/segment_cache.h"
#include "daemon/engine/tag_pool.h"
#include "daemon/exchange/exchange.h"
#include "daemon/host/segment_placement.h"
#include "daemon/ops/internode_policy.h"
#include "daemon/ops/selection_policy.h"
#include "daemon/transport/transport.h"
#include "shm/plan/algorithm.h"
#include "shm/plan/group_shape.h"
#include "shm/segment.h"

namespace ohio {

std::string KeyHex(const GroupKey& key);

struct Member {
  bool attached = false;
  bool departed = false;
  pid_t pid = 0;
};

class Group {
 public:
  using Clock = std::chrono::steady_clock;

  // Creates the segment and the doorbell. A single-node group is ready for round 1 at once;
  // a group spanning nodes registers its segment with the transport (or takes `reused`, a
  // cached one of its key, already registered) under `tag` and is ready once every other
  // node's daemon has told it its own tag and SRB (SetPeer). Its segment goes back to `cache`
  // when the group is destroyed. `internode`: the table its daemons choose inter-node algorithms by;
  // `selection`: the table its ranks choose which calls ohio serves by (handed to them at join).
  // Every other node of the group must hold the same two (checked at setup).
  static Result<std::unique_ptr<Group>> Create(GroupSpec spec, GroupShape shape, uid_t owner, InterNodePolicy internode,
                                               SelectionPolicy selection,
                                               uint64_t ssb_bytes, uint64_t srb_bytes, uint64_t min_slice_bytes,
                                               uint32_t timeout_ms, std::optional<uint32_t> tag,
                                               std::shared_ptr<TagPool> tags, Transport* transport,
                                               std::shared_ptr<SegmentCache> cache,
                                               std::optional<RegisteredSegment> reused);
  ~Group();

  const GroupSpec& spec() const { return spec_; }
  const GroupShape& shape() const { return shape_; }
  const std::string& key_hex() const { return key_hex_; }
  uid_t owner() const { return owner_; }
  const InterNodePolicy& internode_policy() const { return internode_; }
  const InterNodeTable& internode_table() const { return internode_.table; }
  // The selection table the group was created with; a reload does not change it.
  const SelectionPolicy& selection_policy() const { return selection_; }
  uint32_t local_ranks() const { return shape_.ppn(spec_.node); }
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
  uint32_t tag() const { return tag_; }
  uint64_t srb_key() const { return srb_key_; }  // the segment's region with the transport
  uint64_t srb_offset() const { return segment_.header()->srb_offset; }
  uint64_t ssb_bytes() const { return segment_.layout().ssb_bytes; }
  uint64_t srb_bytes() const { return segment_.layout().srb_bytes; }
  uint64_t min_slice_bytes() const { return min_slice_bytes_; }  // this node's, as configured
  // Every other node answered for the group and this node's data connections to them are up
  // (the peer bootstrap's thread sets it; any thread reads it).
  void set_opened_here() { opened_here_.store(true, std::memory_order_release); }
  bool opened_here() const { return opened_here_.load(std::memory_order_acquire); }
  bool spans_nodes() const { return exchange_ != nullptr; }
  // The inter-node side (progress engine thread only); null for a single-node group.
  Exchange* exchange() { return exchange_.get(); }
  // One of this group's puts completed (the transport's kPutDone; groups spanning nodes).
  void OnPutDone(uint64_t cookie);
  // Records what another node's daemon said of the group; publishes round 1 once all did.
  void SetPeer(uint32_t node, const PeerGroupInfo& info);
  uint32_t group_rank(uint32_t local) const { return shape_.rank_at(spec_.node, local); }
  int segment_fd() const { return segment_.fd(); }
  int doorbell_fd() const { return doorbell_fd_; }
  uint64_t segment_bytes() const { return segment_.bytes(); }
  uint32_t timeout_ms() const { return static_cast<uint32_t>(timeout_.count()); }
  SegmentHeader* header() const { return segment_.header(); }
  // Rounds fully completed so far (readable from any thread).
  uint64_t rounds_completed() const;
  bool failed() const;
  // Why it failed, once failed(): what its ranks are told, less "; the group is closed".
  std::string failure() const;
  Code failure_code() const;

  // Guarded by the registry's lock.
  std::vector<Member>& members() { return members_; }
  // Local rank l joined: the address space the daemon moves its nonblocking calls' data from
  // and into, or why it may not (rank_memory.h).
  void Attached(uint32_t l, RankMemoryAccess memory) { nonblocking_->Attach(l, std::move(memory)); }
  // Every local rank has joined (and may have left since).
  bool AllJoined() const {
    for (const Member& m : members_) {
      if (!m.attached && !m.departed) return false;
    }
    return true;
  }
  Clock::time_point created_at() const { return created_at_; }
  // Where its segment was placed, once every local rank joined (guarded by the registry's lock).
  const SegmentPlacement& placement() const { return placement_; }
  void set_placement(SegmentPlacement p) { placement_ = std::move(p); }

  // --- progress engine thread only ---
  // A group spanning nodes: moves the round state machine as far as the ranks allow; true if
  // anything changed. A group on one node has no state machine here: false.
  bool Advance(Clock::time_point now, DaemonCounters* counters);
  // A group on one node, from time to time: takes the calls its ranks counted, and fails the
  // group if some rank has kept the others waiting for longer than the timeout. True if it
  // failed the group.
  bool Watch(Clock::time_point now, DaemonCounters* counters);
  // A group on one node: moves one slice of the nonblocking calls every local rank has posted
  // (NonblockingAlltoall::Advance) of at most `slice_bytes`, with staging from `ledger`; true
  // if it did anything.
  bool AdvanceNonblocking(DaemonCounters* counters, StagingLedger* ledger, uint64_t slice_bytes) {
    return nonblocking_->Advance(counters, ledger, owner_, slice_bytes);
  }
  // A group on one node with a nonblocking call being moved, or posted by every rank and not
  // begun, or either.
  bool nonblocking_moving() const { return nonblocking_->moving(); }
  bool nonblocking_beginning() const {
    return !nonblocking_->moving() && nonblocking_->AllPosted(nonblocking_->next_call());
  }
  bool nonblocking_waiting() const { return nonblocking_moving() || nonblocking_beginning(); }
  // Adds to `counters` what the group's ranks counted in the segment since the last time.
  void FoldCallStats(DaemonCounters* counters);
  // Whether a round is under way, so that its timeout must be watched.
  bool busy() const {
    return !failed() && spans_nodes() && (phase_ == Phase::kReleased || waiting_since_.has_value());
  }
  // Whether the group's ranks may be waiting for the engine inside a blocking call: the group
  // spans nodes (on one node its blocking calls never wait for the engine) and its latest round
  // was not a nonblocking call's. While a nonblocking call moves, its ranks compute instead.
  bool ranks_may_wait_on_engine() const { return !failed() && spans_nodes() && !latest_round_nonblocking_; }
  // A group spanning nodes some of whose ranks posted a nonblocking call the others have not:
  // its timeout must be watched although no round is under way.
  bool posts_pending() const { return !failed() && spans_nodes() && nonblocking_->AnyPosted(); }
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
  // Node `node` of the group said that its rank `rank` departed and closed the group there
  // (RANK_GONE): the calls here can never complete, so the group fails now, naming that rank,
  // instead of at the timeout.
  void RankGoneOnNode(uint32_t node, uint32_t rank, bool left, DaemonCounters* counters);
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

  Group() = default;
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
  // Groups spanning nodes: the daemon's part in the nonblocking calls its ranks posted
  // (nonblocking_across_nodes_alltoall.h), failing the group if it could not play it. True if anything
  // changed.
  bool FillNonblocking(Clock::time_point now, DaemonCounters* counters);
  bool DrainNonblocking(DaemonCounters* counters);
  void FailNonblocking(const Status& why, DaemonCounters* counters);
  void Notify();
  void PublishRoundError(Code code, const std::string& message);
  std::string DescribeLocals(const std::vector<uint32_t>& locals) const;

  GroupSpec spec_;
  GroupShape shape_;
  std::string key_hex_;
  uid_t owner_ = 0;
  InterNodePolicy internode_;
  SelectionPolicy selection_;
  Segment segment_;
  int doorbell_fd_ = -1;
  bool wake_for_each_eager_block_ = true;
  std::atomic<uint64_t>* ranks_woken_ = nullptr;
  std::chrono::milliseconds timeout_{0};
  Clock::time_point created_at_;
  std::vector<Member> members_;
  SegmentPlacement placement_;
  uint32_t tag_ = 0;
  std::shared_ptr<TagPool> tags_;  // the tag is returned when the group is destroyed
  uint64_t srb_key_ = 0;
  uint64_t min_slice_bytes_ = 0;       // this node's configured minimum slice
  uint64_t plan_min_slice_bytes_ = 0;  // the group's: the smallest of every node's met so far
  Transport* transport_ = nullptr;
  std::shared_ptr<SegmentCache> cache_;  // takes the registered segment back (groups spanning nodes)
  SegmentCacheKey cache_key_;
  std::unique_ptr<Exchange> exchange_;
  // Nonblocking calls the ranks posted: moved by nonblocking_ alone on one node, by
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
  std::atomic<bool> opened_here_{false};
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
