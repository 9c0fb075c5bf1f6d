// A group's shared segment as a sealed memfd: created and sized by the daemon, handed to the
// ranks as a file descriptor, mapped by both. Seals stop a client from shrinking the file
// under the daemon (which would turn the daemon's next access into SIGBUS).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "shm/segment_layout.h"

namespace ohio {

class Segment {
 public:
  Segment() = default;
  ~Segment();
  Segment(Segment&& other) noexcept;
  Segment& operator=(Segment&& other) noexcept;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Daemon side: a new zeroed memfd of layout.segment_bytes, sealed against resizing, mapped.
  static Result<Segment> Create(const std::string& name, const SegmentLayout& layout);
  // Daemon side, a segment no process but this one maps any more (a cached one, given to a new
  // group): everything before the SSB (header, slots, count tables) as Create leaves it, so no
  // round, event word, error or count of the group before is seen by the next. The SSB and SRB
  // keep their bytes: every byte of them is written before it is read within a round.
  Status ResetControlState(const SegmentLayout& layout);
  // Client side: maps a received memfd after checking it is a sealed segment of this version
  // whose header agrees with its size. Takes ownership of fd.
  static Result<Segment> Attach(int fd);
  // Client side: faults every page of the mapping in now (see Attach's comment in segment.cc).
  void Populate();

  int fd() const { return fd_; }
  uint64_t bytes() const { return bytes_; }
  SegmentHeader* header() const { return reinterpret_cast<SegmentHeader*>(base_); }
  // Where everything lies, as this process set it (Create) or checked it (Attach). Never read
  // again from the header: every process of the group may write there, and the daemon must not
  // let a rank's write move its slots, SSB or SRB (or their loops' bounds) outside the mapping.
  const SegmentLayout& layout() const { return layout_; }
  RankSlot* slot(uint32_t local_rank) const {
    return reinterpret_cast<RankSlot*>(base_ + layout_.slots_offset) + local_rank;
  }
  uint8_t* ssb() const { return base_ + layout_.ssb_offset; }
  // Local rank l's count table for `round`: tables alternate by the round's parity, and those
  // of one parity lie together in local rank order (shm/plan/vector_plan.h's NodeCounts).
  CountEntry* count_table(uint32_t local_rank, uint32_t round) const {
    return reinterpret_cast<CountEntry*>(base_ + layout_.count_tables_offset) +
           (uint64_t{round & 1} * layout_.local_ranks + local_rank) * layout_.group_size;
  }
  // Whether local rank l has arrived at `round` or beyond, and whether every local rank has;
  // the same for having finished copying out of it.
  bool Arrived(uint32_t l, uint32_t round) const {
    return RoundReached(slot(l)->arrived_round.load(std::memory_order_acquire), round);
  }
  bool Done(uint32_t l, uint32_t round) const {
    return RoundReached(slot(l)->done_round.load(std::memory_order_acquire), round);
  }
  bool AllArrived(uint32_t round) const {
    for (uint32_t l = 0; l < layout_.local_ranks; ++l) {
      if (!Arrived(l, round)) return false;
    }
    return true;
  }
  bool AllDone(uint32_t round) const {
    for (uint32_t l = 0; l < layout_.local_ranks; ++l) {
      if (!Done(l, round)) return false;
    }
    return true;
  }
  // Whether every local rank has started nonblocking call `call` or beyond.
  bool AllStarted(uint32_t call) const {
    for (uint32_t l = 0; l < layout_.local_ranks; ++l) {
      if (!RoundReached(slot(l)->nonblocking_started.load(std::memory_order_acquire), call)) return false;
    }
    return true;
  }
  uint8_t* srb() const { return base_ + layout_.srb_offset; }
  // Daemon only: the lines of its hypercube alltoallv messages for `round` (CubeOutBytes).
  uint8_t* cube_out(uint32_t round) const {
    return base_ + layout_.cube_out_offset + (round & 1) * layout_.cube_out_bytes;
  }

 private:
  void Reset();
  void InitHeader(const SegmentLayout& layout);

  int fd_ = -1;
  uint8_t* base_ = nullptr;
  uint64_t bytes_ = 0;
  SegmentLayout layout_;
};

}  // namespace ohio
