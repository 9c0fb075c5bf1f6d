// Latency histograms of collectives, one per size class of the bytes per rank: lock-free
// counters the progress engine records into and the admin service reads. Classes and bucket
// bounds are fixed (shm/latency_buckets.h) so that samples from different nodes add up.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "shm/latency_buckets.h"

namespace ohio {

class LatencyHistograms {
 public:
  static constexpr size_t kSizeClasses = kLatencySizeClasses;
  static constexpr size_t kBuckets = kLatencyBuckets;  // the last one is +Inf

  // The size class of a collective with this many bytes per rank.
  static size_t SizeClass(uint64_t bytes_per_rank);
  static std::string SizeClassName(size_t size_class);  // e.g. "1KiB-16KiB"
  static uint64_t SizeClassMinBytes(size_t size_class);  // exclusive, except 0
  static uint64_t SizeClassMaxBytes(size_t size_class);  // inclusive; 0 means unbounded
  // Upper bound of bucket b in seconds; infinity for the last.
  static double BucketBoundSeconds(size_t b);

  void Record(uint64_t bytes_per_rank, std::chrono::nanoseconds latency);
  // Samples counted elsewhere (by ranks, in a group's segment) in the same classes and buckets.
  void Add(size_t size_class, size_t bucket, uint64_t count, uint64_t sum_ns);

  struct Snapshot {
    std::array<uint64_t, kBuckets> counts{};  // per bucket, not cumulative
    uint64_t count = 0;                       // the sum of counts, so the two always agree
    uint64_t sum_ns = 0;
  };
  Snapshot Read(size_t size_class) const;

 private:
  struct Class {
    std::array<std::atomic<uint64_t>, kBuckets> buckets{};
    std::atomic<uint64_t> sum_ns{0};
  };
  std::array<Class, kSizeClasses> classes_;
};

}  // namespace ohio
