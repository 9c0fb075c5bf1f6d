// Where a rank's alltoall time goes, stage by stage, when the rank runs with OHIO_STAGE_TIMES=1:
// the measurement behind the stage tables of docs/investigations/. Each stage is the time between two
// clock reads on the rank's path; for rounds spanning nodes the daemon's own steps
// (shm/round_stamps.h) are put on the rank's timeline, relative to its arrival. When the
// variable is unset no clock is read. The report is one line per message size on stderr when
// the group is freed, keyed "name value" so that deploy/lib/stage-table.sh can average ranks.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "shm/round_stamps.h"

namespace ohio {

enum class Stage : uint32_t {
  kAwaitSsb,            // across nodes: this node still sending or copying out the round that used the half
  kCopyIn,              // send buffer -> SSB
  kMeet,                // arrival -> every rank of the node arrived
  kCopyOutOnNode,       // the node's own blocks: SSB -> receive buffer
  kReadPeers,           // one node, single copy: the other ranks' send buffers -> receive buffer
  kAwaitReaders,        // one node, single copy: the others still reading this rank's send buffer
  kAwaitBlocks,         // across nodes: waiting for peer blocks to land
  kCopyOutAcrossNodes,  // across nodes: SRB -> receive buffer
  kCount,
};

// The daemon's steps of a round spanning nodes, as offsets from the rank's arrival.
enum class DaemonStep : uint32_t { kBegun, kPosted, kWritten, kPeersBegun, kLanded, kCount };

class StageReport {
 public:
  // Whether OHIO_STAGE_TIMES asks for the report.
  static bool Requested();

  explicit StageReport(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }

  // A call of `bytes_per_rank` starts now.
  void Start(uint64_t bytes_per_rank) {
    if (enabled_) StartCall(bytes_per_rank);
  }
  // The time since the last lap (or the start) went to `stage`.
  void Lap(Stage stage) {
    if (in_call_) AddLap(stage);
  }
  // This rank published its arrival at a round (after its copy-in lap).
  void Arrived() {
    if (in_call_) arrived_ns_ = last_ns_;
  }
  // The daemon's steps of round k, once its last block has landed.
  void DaemonSteps(const RoundStamps& stamps, uint32_t k) {
    if (in_call_) AddDaemonSteps(stamps, k);
  }
  // The call ended (whatever its outcome: a failed call is counted too).
  void Stop() {
    if (in_call_) StopCall();
  }

  // One line per message size, "ohio stages: rank R bytes M calls C total_us T <stage>_us ...".
  std::string Render(uint32_t rank) const;

 private:
  struct Row {
    uint64_t bytes_per_rank = 0;
    uint64_t calls = 0;
    uint64_t total_ns = 0;
    std::array<uint64_t, static_cast<size_t>(Stage::kCount)> stage_ns{};
    std::array<int64_t, static_cast<size_t>(DaemonStep::kCount)> step_ns{};
    std::array<uint64_t, static_cast<size_t>(DaemonStep::kCount)> step_count{};
    uint64_t trip_ns = 0;
    uint64_t trips = 0;
  };
  // Sizes past this many share the last row (labelled by the first of them).
  static constexpr size_t kMaxRows = 64;

  void StartCall(uint64_t bytes_per_rank);
  void AddLap(Stage stage);
  void AddDaemonSteps(const RoundStamps& stamps, uint32_t k);
  void StopCall();

  bool enabled_;
  bool in_call_ = false;  // between Start and Stop (an opt-out's waits are not a call)
  std::vector<Row> rows_;
  size_t current_ = 0;
  uint64_t start_ns_ = 0;
  uint64_t last_ns_ = 0;
  uint64_t arrived_ns_ = 0;
};

}  // namespace ohio
