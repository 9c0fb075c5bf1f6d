// `ohio-sim calibrate`: measures on the machine it runs on what the simulation charges that is
// not network (calibration.h) and returns it as a Calibration to write out. Takes a few seconds;
// figures taken on a loaded machine are low for bandwidth and high for latencies.
#pragma once

#include <cstdint>

#include "sim/calibration.h"

namespace ohio::sim {

struct CalibrateOptions {
  uint32_t max_threads = 0;       // copy bandwidth with 1..max_threads threads (0: every core)
  uint64_t copy_bytes = 64 << 20;  // each copying thread's buffer: well past the caches
  double seconds_per_figure = 0.3;
};

Calibration MeasureCalibration(const CalibrateOptions& options);

}  // namespace ohio::sim
