#include "daemon/latency_histogram.h"

#include <limits>

namespace ohio {
namespace {

// Each class ends 16 times above the previous one: small messages (latency-bound), three
// middle classes, and the bandwidth-bound rest.
constexpr std::array<uint64_t, LatencyHistograms::kSizeClasses - 1> kClassMax = {
    uint64_t{1} << 10, uint64_t{16} << 10, uint64_t{256} << 10, uint64_t{4} << 20};

constexpr std::array<uint64_t, LatencyHistograms::kBuckets - 1> kBoundNs = {
    10'000,      25'000,        50'000,        100'000,       250'000,       500'000,     1'000'000,
    2'500'000,   5'000'000,     10'000'000,    25'000'000,    50'000'000,    100'000'000, 250'000'000,
    500'000'000, 1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000};

std::string Bytes(uint64_t b) {
  if (b >= (uint64_t{1} << 20) && b % (uint64_t{1} << 20) == 0) return std::to_string(b >> 20) + "MiB";
  if (b >= 1024 && b % 1024 == 0) return std::to_string(b >> 10) + "KiB";
  return std::to_string(b) + "B";
}

}  // namespace

size_t LatencyHistograms::SizeClass(uint64_t bytes_per_rank) {
  for (size_t c = 0; c < kClassMax.size(); ++c) {
    if (bytes_per_rank <= kClassMax[c]) return c;
  }
  return kSizeClasses - 1;
}

uint64_t LatencyHistograms::SizeClassMinBytes(size_t size_class) {
  return size_class == 0 ? 0 : kClassMax[size_class - 1];
}

uint64_t LatencyHistograms::SizeClassMaxBytes(size_t size_class) {
  return size_class < kClassMax.size() ? kClassMax[size_class] : 0;
}

std::string LatencyHistograms::SizeClassName(size_t size_class) {
  if (size_class == 0) return "0-" + Bytes(kClassMax[0]);
  if (size_class == kSizeClasses - 1) return Bytes(kClassMax.back()) + "+";
  return Bytes(kClassMax[size_class - 1]) + "-" + Bytes(kClassMax[size_class]);
}

double LatencyHistograms::BucketBoundSeconds(size_t b) {
  if (b >= kBoundNs.size()) return std::numeric_limits<double>::infinity();
  return static_cast<double>(kBoundNs[b]) / 1e9;
}

void LatencyHistograms::Record(uint64_t bytes_per_rank, std::chrono::nanoseconds latency) {
  const uint64_t ns = latency.count() < 0 ? 0 : static_cast<uint64_t>(latency.count());
  size_t b = 0;
  while (b < kBoundNs.size() && ns > kBoundNs[b]) ++b;
  Class& c = classes_[SizeClass(bytes_per_rank)];
  c.buckets[b].fetch_add(1, std::memory_order_relaxed);
  c.sum_ns.fetch_add(ns, std::memory_order_relaxed);
}

LatencyHistograms::Snapshot LatencyHistograms::Read(size_t size_class) const {
  Snapshot s;
  const Class& c = classes_[size_class];
  for (size_t b = 0; b < kBuckets; ++b) {
    s.counts[b] = c.buckets[b].load(std::memory_order_relaxed);
    s.count += s.counts[b];
  }
  s.sum_ns = c.sum_ns.load(std::memory_order_relaxed);
  return s;
}

}  // namespace ohio
