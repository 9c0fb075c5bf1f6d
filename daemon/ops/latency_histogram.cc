#include "daemon/ops/latency_histogram.h"

#include <limits>

namespace ohio {
namespace {

constexpr const auto& kClassMax = kLatencyClassMaxBytes;
constexpr const auto& kBoundNs = kLatencyBoundNs;

std::string Bytes(uint64_t b) {
  if (b >= (uint64_t{1} << 20) && b % (uint64_t{1} << 20) == 0) return std::to_string(b >> 20) + "MiB";
  if (b >= 1024 && b % 1024 == 0) return std::to_string(b >> 10) + "KiB";
  return std::to_string(b) + "B";
}

}  // namespace

size_t LatencyHistograms::SizeClass(uint64_t bytes_per_rank) { return LatencySizeClass(bytes_per_rank); }

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
  Add(SizeClass(bytes_per_rank), LatencyBucket(ns), 1, ns);
}

void LatencyHistograms::Add(size_t size_class, size_t bucket, uint64_t count, uint64_t sum_ns) {
  Class& c = classes_[size_class];
  c.buckets[bucket].fetch_add(count, std::memory_order_relaxed);
  c.sum_ns.fetch_add(sum_ns, std::memory_order_relaxed);
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
