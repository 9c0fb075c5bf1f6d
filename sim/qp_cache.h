// The NIC queue-pair cache, which SimGrid does not model: a NIC keeps the state of a bounded
// number of queue pairs on chip; a message on a queue pair that is not cached first fetches it
// from host memory. Modelled per message: with `active` queue pairs in use by a node and room
// for `entries`, a fraction 1 - entries/active of its messages miss (the queue pairs are used
// round-robin, so an LRU cache smaller than the set misses in proportion), and each miss adds
// `penalty` seconds to the message. Off (no penalty) when entries is 0, as by default.
#pragma once

#include <cstdint>

namespace ohio::sim {

struct QpCacheModel {
  uint64_t entries = 0;   // queue pairs the NIC caches; 0: the model is off
  double penalty = 0;     // s per message that misses

  bool enabled() const { return entries > 0; }
  // Seconds added to each message of a node with `active` queue pairs in use.
  double PenaltyPerMessage(uint64_t active) const {
    if (!enabled() || active <= entries) return 0;
    return penalty * (1.0 - static_cast<double>(entries) / static_cast<double>(active));
  }
};

}  // namespace ohio::sim
