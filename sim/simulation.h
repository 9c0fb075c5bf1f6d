// One simulated run: a group of N nodes x PPN ranks on the first N hosts of a SimGrid platform,
// calling alltoall `iterations` times for each size. Per node, a daemon actor (and the half of
// it that takes messages in) and one actor per rank play each round as round_schedule.h plans
// it: the ranks copy (charged from the calibration), hand off to the daemon, which announces,
// credits and posts puts as ohiod does; puts and control messages are SimGrid communications
// between the nodes' daemons. The doing half of ohio-sim; the planning is round_schedule.h's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "sim/calibration.h"
#include "sim/count_matrix.h"
#include "sim/qp_cache.h"
#include "sim/round_schedule.h"

namespace ohio::sim {

struct SimRequest {
  std::string platform;           // SimGrid XML platform file
  std::vector<std::string> cfg;   // SimGrid --cfg settings (name:value), e.g. network/model:CM02
  std::vector<uint32_t> ppn;      // ranks per node, placed consecutively on hosts in natural name order
  std::vector<uint64_t> sizes;    // M of each call series, in order
  // Set: the run is `iterations` alltoallv calls with these counts instead (sizes unused).
  std::shared_ptr<const CountMatrix> counts;
  uint32_t iterations = 1;        // calls per size
  // Calls of more slices than this (a slice: the rounds that carry one byte range of every
  // message) are simulated for their first max_slices slices; the rest are predicted to take as
  // long as the last one simulated, and are not counted in the frames. 0: every round.
  uint64_t max_slices = 0;
  GroupSettings settings;
  Calibration calibration;
  QpCacheModel qp_cache;
};

// What one node's daemon sent and received in the whole run, as ohiod's admin counters name them.
struct NodeCounters {
  uint64_t data_frames_sent = 0;
  uint64_t data_frames_received = 0;
  uint64_t bytes_sent = 0;  // the ranks' bytes, headers left out
  uint64_t bytes_received = 0;
  uint64_t control_frames_sent = 0;  // ROUND_READY and CREDIT
  uint64_t control_frames_received = 0;
  // Messages (sent or received, data or control) whose queue pair missed the NIC's cache
  // (SimRequest::qp_cache; 0 when the model is off).
  uint64_t qp_misses = 0;
};

struct CallTiming {
  uint64_t bytes_per_rank = 0;
  uint32_t iteration = 0;
  double seconds = 0;  // from every rank's start to the last rank's end
};

struct SizeSummary {
  uint64_t bytes_per_rank = 0;  // 0 for an alltoallv
  bool vector = false;          // alltoallv calls (SimRequest::counts)
  uint64_t stream_rounds = 0;   // alltoallv: stream rounds after the first pairwise round
  uint32_t cube_went_again = 0;  // alltoallv: calls whose hypercube round went again
  bool eager = false;
  InterNodeAlgorithm internode = InterNodeAlgorithm::kPairwise;
  uint64_t rounds = 0;
  uint64_t simulated_rounds = 0;  // fewer than rounds: the rest predicted (SimRequest::max_slices)
  double median = 0, min = 0, max = 0;  // seconds per call
};

struct SimResult {
  std::vector<std::string> hosts;  // the hosts the nodes ran on
  std::vector<CallTiming> calls;
  std::vector<SizeSummary> sizes;
  std::vector<NodeCounters> nodes;
  double simulated_seconds = 0;
};

// Runs the simulation. Errors: a platform file SimGrid cannot read (its file and line), fewer
// hosts than nodes, a shape or buffers the planners refuse. May be called once per process
// (SimGrid keeps one engine).
Result<SimResult> RunSimulation(const SimRequest& request);

}  // namespace ohio::sim
