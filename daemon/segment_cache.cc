#include "daemon/segment_cache.h"

#include <spdlog/spdlog.h>

#include "daemon/segment_holders.h"

namespace ohio {

SegmentCache::~SegmentCache() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Entry& e : entries_) transport_->DeregisterRegion(e.s.region_key);
}

std::optional<RegisteredSegment> SegmentCache::Take(const SegmentCacheKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (!(it->key == key)) continue;
    if (const auto holder = OtherSegmentHolder(it->s.segment.fd())) {
      ++stats_.still_held;
      spdlog::info("segment cache: a cached segment of uid {} is not reused: {}", key.uid, *holder);
      continue;
    }
    const std::optional<uint64_t> region = transport_->ReuseRegion(it->s.region_key);
    if (!region) continue;  // a peer has yet to say it is done with it
    RegisteredSegment s = std::move(it->s);
    s.region_key = *region;
    stats_.cached_bytes -= s.segment.bytes();
    --stats_.cached_segments;
    stats_.in_use_bytes += s.segment.bytes();
    ++stats_.hits;
    entries_.erase(it);
    return s;
  }
  ++stats_.misses;
  return std::nullopt;
}

void SegmentCache::Trim(uint64_t registered_need, uint64_t max_cached_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  while (!entries_.empty() && (stats_.in_use_bytes + stats_.cached_bytes + registered_need > limit_ ||
                               stats_.cached_bytes > max_cached_bytes)) {
    EvictOldest();
  }
}

void SegmentCache::Registered(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.in_use_bytes += bytes;
}

void SegmentCache::Return(const SegmentCacheKey& key, RegisteredSegment s) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t bytes = s.segment.bytes();
  stats_.in_use_bytes -= bytes;
  if (stats_.in_use_bytes + bytes > limit_ || !transport_->ParkRegion(s.region_key)) {
    transport_->DeregisterRegion(s.region_key);  // no-op if ParkRegion already did
    return;
  }
  entries_.push_front(Entry{key, std::move(s)});
  stats_.cached_bytes += bytes;
  ++stats_.cached_segments;
  while (stats_.in_use_bytes + stats_.cached_bytes > limit_) EvictOldest();
}

void SegmentCache::EvictOldest() {
  Entry& e = entries_.back();
  transport_->DeregisterRegion(e.s.region_key);
  stats_.cached_bytes -= e.s.segment.bytes();
  --stats_.cached_segments;
  ++stats_.evictions;
  entries_.pop_back();  // unmaps and closes the memfd
}

uint64_t SegmentCache::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_.cached_bytes;
}

SegmentCacheStats SegmentCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  SegmentCacheStats s = stats_;
  s.limit_bytes = limit_;
  return s;
}

}  // namespace ohio
