#include "daemon/engine/segment_cache.h"

#include <unistd.h>

#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

#include "daemon/engine/segment_holders.h"

namespace ohio {

SegmentCache::~SegmentCache() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Entry& e : entries_) transport_->DeregisterRegion(e.s.region_key);
}

std::optional<RegisteredSegment> SegmentCache::Take(const SegmentCacheKey& key) {
  std::unique_lock<std::mutex> lock(mu_);
  std::set<uint64_t> examined;
  for (;;) {
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [&](const Entry& e) { return e.key == key && examined.count(e.serial) == 0; });
    if (it == entries_.end()) break;
    const uint64_t serial = it->serial;
    examined.insert(serial);
    // /proc is read without the lock (milliseconds on a busy node), so that a group ending on
    // the progress engine meanwhile is not held up; a duplicate keeps the memfd if the entry
    // is evicted in the meantime.
    const int fd = dup(it->s.segment.fd());
    if (fd < 0) continue;
    lock.unlock();
    const std::optional<std::string> holder = OtherSegmentHolder(fd);
    close(fd);
    lock.lock();
    it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.serial == serial; });
    if (it == entries_.end()) continue;
    if (holder) {
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
  entries_.push_front(Entry{key, std::move(s), next_serial_++});
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
