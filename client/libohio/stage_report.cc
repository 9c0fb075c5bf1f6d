#include "client/libohio/stage_report.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ohio {
namespace {

constexpr const char* kStageNames[] = {"await_ssb", "copy_in", "meet", "copy_out_on_node",
                                       "read_peers", "await_readers", "await_blocks", "copy_out_across_nodes"};
static_assert(sizeof(kStageNames) / sizeof(kStageNames[0]) == static_cast<size_t>(Stage::kCount), "a name per stage");
constexpr const char* kStepNames[] = {"daemon_begun", "daemon_posted", "daemon_written", "peers_begun",
                                      "daemon_landed"};
static_assert(sizeof(kStepNames) / sizeof(kStepNames[0]) == static_cast<size_t>(DaemonStep::kCount), "a name per step");

}  // namespace

bool StageReport::Requested() {
  const char* v = std::getenv("OHIO_STAGE_TIMES");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

void StageReport::StartCall(uint64_t bytes_per_rank) {
  size_t i = 0;
  while (i < rows_.size() && rows_[i].bytes_per_rank != bytes_per_rank) ++i;
  if (i == rows_.size()) {
    if (rows_.size() < kMaxRows) {
      rows_.push_back(Row{});
      rows_.back().bytes_per_rank = bytes_per_rank;
    } else {
      i = kMaxRows - 1;
    }
  }
  current_ = i;
  start_ns_ = last_ns_ = MonotonicNs();
  arrived_ns_ = 0;
  in_call_ = true;
}

void StageReport::AddLap(Stage stage) {
  const uint64_t now = MonotonicNs();
  rows_[current_].stage_ns[static_cast<size_t>(stage)] += now - last_ns_;
  last_ns_ = now;
}

void StageReport::AddDaemonSteps(const RoundStamps& stamps, uint32_t k) {
  if (stamps.round.load(std::memory_order_acquire) != k || arrived_ns_ == 0) return;
  Row& row = rows_[current_];
  const uint64_t at[] = {stamps.begun_ns.load(std::memory_order_relaxed), stamps.posted_ns.load(std::memory_order_relaxed),
                         stamps.written_ns.load(std::memory_order_relaxed),
                         stamps.peers_begun_ns.load(std::memory_order_relaxed),
                         stamps.landed_ns.load(std::memory_order_relaxed)};
  for (size_t s = 0; s < static_cast<size_t>(DaemonStep::kCount); ++s) {
    if (at[s] == 0) continue;  // not taken (yet): a put still being written, no peer block
    row.step_ns[s] += static_cast<int64_t>(at[s] - arrived_ns_);
    ++row.step_count[s];
  }
  if (const uint64_t trip = stamps.trip_ns.load(std::memory_order_relaxed); trip != 0) {
    row.trip_ns += trip;
    ++row.trips;
  }
}

void StageReport::StopCall() {
  Row& row = rows_[current_];
  row.total_ns += MonotonicNs() - start_ns_;
  ++row.calls;
  in_call_ = false;
}

std::string StageReport::Render(uint32_t rank) const {
  std::string out;
  char buf[96];
  for (const Row& row : rows_) {
    if (row.calls == 0) continue;
    const double calls = static_cast<double>(row.calls);
    std::snprintf(buf, sizeof(buf), "ohio stages: rank %u bytes %llu calls %llu total_us %.2f", rank,
                  static_cast<unsigned long long>(row.bytes_per_rank), static_cast<unsigned long long>(row.calls),
                  row.total_ns / calls / 1000.0);
    out += buf;
    for (size_t s = 0; s < static_cast<size_t>(Stage::kCount); ++s) {
      std::snprintf(buf, sizeof(buf), " %s_us %.2f", kStageNames[s], row.stage_ns[s] / calls / 1000.0);
      out += buf;
    }
    for (size_t s = 0; s < static_cast<size_t>(DaemonStep::kCount); ++s) {
      if (row.step_count[s] == 0) continue;
      std::snprintf(buf, sizeof(buf), " %s_us %.2f", kStepNames[s],
                    static_cast<double>(row.step_ns[s]) / static_cast<double>(row.step_count[s]) / 1000.0);
      out += buf;
    }
    if (row.trips != 0) {
      std::snprintf(buf, sizeof(buf), " trip_us %.2f", static_cast<double>(row.trip_ns) / row.trips / 1000.0);
      out += buf;
    }
    out += "\n";
  }
  return out;
}

}  // namespace ohio
