#include "sim/qp_cache.h"

namespace ohio::sim {

QueuePairCache::QueuePairCache(uint64_t entries, uint32_t peers) : entries_(entries), where_(peers, recent_.end()) {}

bool QueuePairCache::Use(uint32_t peer) {
  ++uses_;
  auto& at = where_.at(peer);
  if (at != recent_.end()) {
    recent_.splice(recent_.begin(), recent_, at);  // iterators stay valid across splice
    return false;
  }
  ++misses_;
  if (recent_.size() >= entries_) {
    where_[recent_.back()] = recent_.end();
    recent_.pop_back();
  }
  recent_.push_front(peer);
  at = recent_.begin();
  return true;
}

}  // namespace ohio::sim
