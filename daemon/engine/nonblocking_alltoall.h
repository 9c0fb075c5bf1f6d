// Nonblocking alltoalls of a group on one node, moved by the daemon while the ranks compute
// (ohio_ialltoall). A rank posts a call in its slot's ring (the addresses of its send and
// receive buffers in its own address space, and M) and goes back to its work; once every
// local rank has posted call s, the daemon reads every rank's row and writes every rank's
// column in the ranks' own address spaces (rank_memory.h), publishes the outcome and
// nonblocking_done = s, and wakes the ranks that sleep on it. A rank's wait is then only a look at
// nonblocking_done: no copy is left for it to do.
//
// The daemon reaches each rank's memory only through what it opened at join, with that rank's
// user's rights (rank_memory.h): never by a pid, never by what a rank wrote in the segment.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/engine/counters.h"
#include "daemon/engine/rank_memory.h"
#include "shm/plan/group_shape.h"
#include "shm/segment.h"

namespace ohio {

class NonblockingAlltoall {
 public:
  // The daemon holds every row of a call at once (so that in place works and each rank costs
  // one read and one write); a call larger than this is refused rather than allowed to take
  // the node's memory.
  static constexpr uint64_t kMaxCallBytes = uint64_t{256} << 20;

  // `node`: the group's node this daemon is; a group spanning nodes only uses the posting side
  // (AllPosted, Stalled, Publish, Refused, Memory): NonblockingAcrossNodesAlltoall moves its calls.
  NonblockingAlltoall(const Segment* segment, const GroupShape* shape, uint32_t node);

  // Local rank l's address space, from its join (control thread); cleared once it left.
  void Attach(uint32_t l, RankMemoryAccess access);
  void Detach(uint32_t l) { Attach(l, RankMemoryAccess{}); }
  // Local rank l's address space to move a call's bytes in (any thread), or why there is none:
  // the rank left, or ohiod may not touch its memory.
  Result<std::shared_ptr<const RankMemory>> Memory(uint32_t l) const;
  // Moves every call that all local ranks have posted (progress engine thread); true if any.
  bool Advance(DaemonCounters* counters);
  // At every watch tick: if some ranks have posted the next call and others have not for
  // `timeout`, why (naming the ranks missing); the group's timeout applies as to a round.
  std::optional<std::string> Stalled(std::chrono::steady_clock::time_point now, std::chrono::milliseconds timeout);

  // The next call to complete, and whether every local rank has posted `call`.
  uint32_t next_call() const { return segment_->header()->nonblocking_done.load(std::memory_order_acquire) + 1; }
  bool AllPosted(uint32_t call) const { return segment_->AllPosted(call); }
  // Whether some local rank has posted a call not yet complete.
  bool AnyPosted() const;
  // Whether every rank posted the same kind of call (alltoall or alltoallv), naming who did not.
  Status SameKind(uint32_t call) const;
  // Publishes call's outcome and nonblocking_done = call, and wakes the ranks.
  void Publish(uint32_t call, const Status& outcome);
  // Why a transfer of `bytes` of `what` at `address` in local rank l's memory stopped short
  // (errno still the transfer's).
  Status Refused(uint32_t l, const RankMemory& memory, bool writing, const char* what, uint64_t bytes,
                 uint64_t address) const;

 private:
  Status Move(uint32_t call, uint64_t m);
  // An alltoallv; *bytes is what it moved between the ranks.
  Status MoveVector(uint32_t call, uint64_t* bytes);
  // Every rank's tables of `call`, into tables_ (local rank l's at l * kNonblockingTables * ranks_).
  Status ReadTables(uint32_t call);
  // Local rank l's entry for group rank g in its table t (an NonblockingTable), from tables_.
  uint64_t Table(uint32_t l, uint32_t t, uint32_t g) const {
    return tables_[(uint64_t{l} * kNonblockingTables + t) * ranks_ + g];
  }
  Status PairsAgree() const;

  const Segment* segment_;
  const GroupShape* shape_;
  uint32_t node_;
  uint32_t ranks_;
  mutable std::mutex memories_mutex_;  // the control thread attaches, the engine moves
  std::vector<RankMemoryAccess> memories_;
  std::vector<uint8_t> rows_;  // every rank's row of the call being moved
  std::vector<uint64_t> tables_;  // every rank's tables of the alltoallv being moved
  std::vector<uint64_t> piece_at_;  // where pair (src, dst)'s bytes are in rows_, by src * ranks_ + dst
  uint32_t watched_call_ = 0;  // the call some rank posted and others not, at the last tick
  std::chrono::steady_clock::time_point watched_since_;
};

}  // namespace ohio
