// Segments of groups spanning nodes that have ended, kept mapped and registered with the
// transport for the next group of the same uid and layout on this node, so that it starts on
// registered memory without registering anything (ibv_reg_mr pins and maps every page: the
// costliest step of a new group). Also the account of all registered memory, open groups'
// segments and cached ones, held under registered-memory-limit by evicting the least recently
// used cached segments. Thread-safe: the control thread takes and trims, a group's last owner
// (control or engine thread) returns.
//
// A segment is never given to another uid: the uid is part of the key. Nor while any process
// but ohiod can still reach it (segment_holders.h): the next group's ranks get a segment that
// no process of the group before can write into.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <tuple>

#include "daemon/transport/transport.h"
#include "shm/segment.h"

namespace ohio {

// What decides a segment's layout (shm/segment_layout.h's ComputeSegmentLayout), and its owner.
struct SegmentCacheKey {
  uid_t uid = 0;
  uint32_t local_ranks = 0;
  uint32_t group_size = 0;
  uint64_t ssb_bytes = 0;
  uint64_t srb_bytes = 0;
  bool operator==(const SegmentCacheKey& o) const {
    return std::tie(uid, local_ranks, group_size, ssb_bytes, srb_bytes) ==
           std::tie(o.uid, o.local_ranks, o.group_size, o.ssb_bytes, o.srb_bytes);
  }
};

// A group's segment and the key its memory is registered under with the transport.
struct RegisteredSegment {
  Segment segment;
  uint64_t region_key = 0;
};

struct SegmentCacheStats {
  uint64_t hits = 0;          // new groups given a cached segment: nothing registered
  uint64_t misses = 0;        // new groups spanning nodes that found none to take
  uint64_t evictions = 0;     // cached segments deregistered and unmapped to stay under the limit
  uint64_t still_held = 0;    // times a cached segment of the right key was passed over: another process could reach it
  uint64_t cached_bytes = 0;
  uint64_t cached_segments = 0;
  uint64_t in_use_bytes = 0;  // registered segments of open groups
  uint64_t limit_bytes = 0;   // registered-memory-limit: in use plus cached stays under it while the cache holds any
};

class SegmentCache {
 public:
  SegmentCache(Transport* transport, uint64_t limit_bytes) : transport_(transport), limit_(limit_bytes) {}
  ~SegmentCache();  // deregisters and unmaps what it holds
  SegmentCache(const SegmentCache&) = delete;
  SegmentCache& operator=(const SegmentCache&) = delete;

  // For a new group of `key`: the most recently cached segment of that key that no other
  // process can reach and that its peers are done with, its region under a new key; in use
  // from now on (a hit). Empty if there is none (a miss). The caller resets its control state.
  std::optional<RegisteredSegment> Take(const SegmentCacheKey& key);
  // Before a new group is created without a cached segment: evicts the least recently used
  // until the registered memory with `registered_need` more fits the limit, and the cache
  // holds at most `max_cached_bytes` (the shared memory the node has left).
  void Trim(uint64_t registered_need, uint64_t max_cached_bytes);
  // A new group registered its segment of `bytes`.
  void Registered(uint64_t bytes);
  // The segment of a group that ended: cached if it fits the limit (evicting older ones),
  // else deregistered and unmapped.
  void Return(const SegmentCacheKey& key, RegisteredSegment s);

  uint64_t cached_bytes() const;
  SegmentCacheStats stats() const;

 private:
  struct Entry {
    SegmentCacheKey key;
    RegisteredSegment s;
    uint64_t serial = 0;  // names it across Take's unlocked look at /proc
  };
  // Caller holds mu_.
  void EvictOldest();

  Transport* transport_;
  const uint64_t limit_;
  mutable std::mutex mu_;
  // Most recently returned first. Searched in order: the cache holds at most limit / segment
  // size entries, a few dozen, looked at once per new group.
  std::list<Entry> entries_;
  uint64_t next_serial_ = 1;
  SegmentCacheStats stats_;
};

}  // namespace ohio
