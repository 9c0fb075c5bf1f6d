// What `ohio-sim run` prints: per size the predicted time of one call (median, min, max over
// the iterations) and how it ran, and per node the frames and bytes its daemon sent and
// received (the names ohiod's admin counters use); as a table or as JSON.
#pragma once

#include <string>

#include "sim/simulation.h"

namespace ohio::sim {

std::string RenderSimText(const SimRequest& request, const SimResult& result);
std::string RenderSimJson(const SimRequest& request, const SimResult& result);

}  // namespace ohio::sim
