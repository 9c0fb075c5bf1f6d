// The fixed classes (by bytes per rank) and buckets (10 µs to 10 s, 1-2.5-5 steps) of collective
// latency. Fixed so that samples from different nodes, and from ranks counting in a segment,
// add up with the daemon's own.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace ohio {

constexpr size_t kLatencySizeClasses = 5;
constexpr size_t kLatencyBuckets = 20;  // the last one is +Inf

// Each class ends 16 times above the previous one: small messages (latency-bound), three
// middle classes, and the bandwidth-bound rest.
constexpr std::array<uint64_t, kLatencySizeClasses - 1> kLatencyClassMaxBytes = {
    uint64_t{1} << 10, uint64_t{16} << 10, uint64_t{256} << 10, uint64_t{4} << 20};

constexpr std::array<uint64_t, kLatencyBuckets - 1> kLatencyBoundNs = {
    10'000,      25'000,        50'000,        100'000,       250'000,       500'000,     1'000'000,
    2'500'000,   5'000'000,     10'000'000,    25'000'000,    50'000'000,    100'000'000, 250'000'000,
    500'000'000, 1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000};

constexpr size_t LatencySizeClass(uint64_t bytes_per_rank) {
  for (size_t c = 0; c < kLatencyClassMaxBytes.size(); ++c) {
    if (bytes_per_rank <= kLatencyClassMaxBytes[c]) return c;
  }
  return kLatencySizeClasses - 1;
}

constexpr size_t LatencyBucket(uint64_t ns) {
  size_t b = 0;
  while (b < kLatencyBoundNs.size() && ns > kLatencyBoundNs[b]) ++b;
  return b;
}

}  // namespace ohio
