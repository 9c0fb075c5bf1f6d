// What ohio-sim charges for the work that is not network: the ranks' copies, the hand-offs
// between ranks and their daemon, and the daemon's own costs per message and per round; and the
// NIC queue-pair cache model's parameters (qp_cache.h). Read from, and written to, a small text
// file: one `key value unit` per line, '#' starts a comment (docs/SIMULATION.md lists the keys).
// Every key but the copy bandwidths has a default; the unit is checked so that a figure in the
// wrong unit is an error rather than a prediction off by a factor of a million.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ohio::sim {

struct Calibration {
  // Aggregate memcpy bandwidth (bytes/s) with 1, 2, ... threads copying at once on one node:
  // copy_bandwidth[t - 1] for t threads. Beyond the last measured count the node's copy
  // bandwidth is taken as saturated at the last figure.
  std::vector<double> copy_bandwidth;
  double handoff_latency = 2e-6;        // s: one way, a rank to its daemon or back (futex wake)
  double daemon_message_cost = 1e-6;    // s: the daemon's work to post or take in one message
  double daemon_round_cost = 2e-6;      // s: the daemon's work to begin a round (plan lookup, header)
  // NIC queue-pair cache (qp_cache.h): 0 entries = the model is off.
  uint64_t qp_cache_entries = 0;
  double qp_miss_penalty = 0;           // s: added to a message when its queue pair is not cached
  std::string note;                     // free text carried as a comment (where and how measured)
};

// Per-rank copy bandwidth (bytes/s) when `copying` ranks of a node with `cores` cores copy at
// once: the aggregate of min(copying, cores) threads, shared evenly by the ranks.
double PerRankCopyBandwidth(const Calibration& c, uint32_t copying, uint32_t cores);

// Parses a calibration file's text; errors name `source` and the line.
Result<Calibration> ParseCalibration(const std::string& text, const std::string& source);
Result<Calibration> ReadCalibration(const std::string& path);
std::string RenderCalibration(const Calibration& c);

}  // namespace ohio::sim
