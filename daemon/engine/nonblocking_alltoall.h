// Nonblocking alltoalls of a group on one node, moved by the daemon while the ranks compute
// (ohio_ialltoall). A rank starts a call in its slot's ring (the addresses of its send and
// receive buffers in its own address space, and M) and goes back to its work; once every
// local rank has started call s, the daemon moves the call's pieces between the ranks' own
// address spaces (rank_memory.h), publishes the outcome and nonblocking_done = s, and wakes the
// ranks that sleep on it. A rank's wait is then only a look at nonblocking_done: no copy is
// left for it to do.
//
// A call of any size goes through a staging area of at most kSliceBytes, one slice at a time
// (pair_batches.h says how a slice is cut so that in place stays right): the memory ohiod holds
// for a call is bounded and counted against its uid (staging_ledger.h), and the engine serves
// other groups between two slices of a large call, so no group holds it for long. The area is
// freed when the call is done.
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
#include "daemon/engine/pair_batches.h"
#include "daemon/engine/rank_memory.h"
#include "daemon/engine/staging_ledger.h"
#include "shm/plan/group_shape.h"
#include "shm/segment.h"

namespace ohio {

class NonblockingAlltoall {
 public:
  // The most of a call ohiod holds at once, and so the most one slice copies (through
  // /proc/<pid>/mem; its time is in docs/PERFORMANCE.md): the longest this group holds the
  // engine while no other uid's calls wait.
  static constexpr uint64_t kSliceBytes = uint64_t{256} << 10;
  // A slice while other uids' calls wait: what another uid's small call waits for. Smaller
  // slices bring a small call's time beside another uid's large calls closer to its time alone
  // and slow the large calls; 16 KiB is where that was weighed (docs/PERFORMANCE.md, "Figures
  // behind constants in the code").
  static constexpr uint64_t kSharedSliceBytes = uint64_t{16} << 10;
  // The least a call is given when its uid's memory share is taken (StagingLedger::Take).
  static constexpr uint64_t kStagingFloorBytes = uint64_t{64} << 10;

  // `node`: the group's node this daemon is; a group spanning nodes only uses the starting side
  // (AllStarted, Stalled, Publish, Refused, Memory): NonblockingAcrossNodesAlltoall moves its calls.
  NonblockingAlltoall(const Segment* segment, const GroupShape* shape, uint32_t node);
  ~NonblockingAlltoall();

  // Local rank l's address space, from its join (control thread); cleared once it left.
  void Attach(uint32_t l, RankMemoryAccess access);
  void Detach(uint32_t l) { Attach(l, RankMemoryAccess{}); }
  // Local rank l's address space to move a call's bytes in (any thread), or why there is none:
  // the rank left, or ohiod may not touch its memory.
  Result<std::shared_ptr<const RankMemory>> Memory(uint32_t l) const;
  // Moves one slice of the call under way, of at most `slice_bytes`, starting the next one that
  // every local rank has started if none is (progress engine thread); true if it did anything.
  // Staging is taken from `ledger` for `owner`, the group's uid, and given back when the call
  // is done.
  bool Advance(DaemonCounters* counters, StagingLedger* ledger, uid_t owner, uint64_t slice_bytes);
  // Whether a call is being moved (more slices of it are to come).
  bool moving() const { return call_ != 0; }
  // At every watch tick: if some ranks have started the next call and others have not for
  // `timeout`, why (naming the ranks missing); the group's timeout applies as to a round.
  std::optional<std::string> Stalled(std::chrono::steady_clock::time_point now, std::chrono::milliseconds timeout);

  // The next call to complete, and whether every local rank has started `call`.
  uint32_t next_call() const { return segment_->header()->nonblocking_done.load(std::memory_order_acquire) + 1; }
  bool AllStarted(uint32_t call) const { return segment_->AllStarted(call); }
  // Whether some local rank has started a call not yet complete.
  bool AnyStarted() const;
  // Whether every rank started the same kind of call (alltoall or alltoallv), naming who did not.
  Status SameKind(uint32_t call) const;
  // Publishes call's outcome and nonblocking_done = call, and wakes the ranks.
  void Publish(uint32_t call, const Status& outcome);
  // Why a transfer of `bytes` of `what` at `address` in local rank l's memory stopped short
  // (errno still the transfer's).
  Status Refused(uint32_t l, const RankMemory& memory, bool writing, const char* what, uint64_t bytes,
                 uint64_t address) const;

 private:
  // Checks call's starts (and an alltoallv's tables) and plans its slices; not OK fails it.
  Status Begin(uint32_t call);
  // Reads and then writes the pieces of the next slice; *done once there is none left.
  Status MoveSlice(uint64_t slice_bytes, bool* done);
  // Publishes the call's outcome, counts it and frees its staging.
  void Finish(const Status& outcome, DaemonCounters* counters);
  void FreeStaging();
  // Where pair (src, dst)'s piece lies in src's send buffer and in dst's receive buffer, and
  // its length, for the call under way (group ranks).
  uint64_t PieceBytes(uint32_t src, uint32_t dst) const;
  uint64_t SendAt(uint32_t src, uint32_t dst) const;
  uint64_t RecvAt(uint32_t src, uint32_t dst) const;
  // Runs the pieces gathered for each local rank, reading or writing.
  Status RunPieces(bool writing);
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
  std::vector<uint64_t> tables_;  // every rank's tables of the alltoallv being moved

  // The call being moved (0: none), its kind, M, the bytes moved so far and its slices.
  uint32_t call_ = 0;
  bool vector_ = false;
  uint64_t m_ = 0;
  uint64_t moved_ = 0;
  std::optional<PairBatches> batches_;
  std::vector<PairChunk> chunks_;  // one slice's
  std::vector<uint8_t> staging_;
  StagingLedger* ledger_ = nullptr;  // whom staging_ was taken from, for whom
  uid_t staging_uid_ = 0;
  // One slice's pieces by local rank: where in the rank's memory, where in staging_, how long.
  struct Piece {
    uint64_t remote;
    uint8_t* local;
    uint64_t length;
  };
  std::vector<std::vector<Piece>> reads_, writes_;
  std::vector<iovec> local_, remote_;  // one transfer's, reused
  uint32_t watched_call_ = 0;  // the call some rank started and others not, at the last tick
  std::chrono::steady_clock::time_point watched_since_;
};

}  // namespace ohio
