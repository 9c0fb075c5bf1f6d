// The NIC queue-pair cache, which SimGrid does not model: a NIC keeps the state of a bounded
// number of queue pairs on chip; a message on a queue pair that is not cached first fetches it
// from host memory. ohiod keeps one queue pair per peer node, for its puts and its control
// frames both ways, so a node's cache is used once per message it sends or takes in, keyed by the
// peer node, in the order its daemon handles them, across rounds and calls. Least recently used
// entries are evicted. Pure: the simulation tells it which peer each message is on and charges
// `penalty` for each miss it reports.
#pragma once

#include <cstdint>
#include <list>
#include <vector>

namespace ohio::sim {

// The model's settings (the calibration file's qp_cache_entries and qp_miss_penalty).
struct QpCacheModel {
  uint64_t entries = 0;  // queue pairs the NIC caches; 0: the model is off
  double penalty = 0;    // s per message whose queue pair missed

  bool enabled() const { return entries > 0; }
};

// One NIC's cache of the queue pairs to `peers` nodes, least recently used evicted first.
class QueuePairCache {
 public:
  // entries >= 1 (a model that is off keeps no cache).
  QueuePairCache(uint64_t entries, uint32_t peers);
  // Not copied or moved: where_ holds iterators into recent_, and a moved list's end() is
  // another list's.
  QueuePairCache(const QueuePairCache&) = delete;
  QueuePairCache& operator=(const QueuePairCache&) = delete;

  // A message on the queue pair to `peer` (< peers): true if it missed. The queue pair is the
  // most recently used afterwards.
  bool Use(uint32_t peer);

  uint64_t uses() const { return uses_; }
  uint64_t misses() const { return misses_; }

 private:
  uint64_t entries_;
  std::list<uint32_t> recent_;  // cached peers, most recently used first
  std::vector<std::list<uint32_t>::iterator> where_;  // by peer: its place in recent_, or end()
  uint64_t uses_ = 0;
  uint64_t misses_ = 0;
};

}  // namespace ohio::sim
