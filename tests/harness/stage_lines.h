// The stage report (OHIO_STAGE_TIMES=1, client/libohio/stage_report.h) as tests read it: asked for in
// the rank processes a test starts, and parsed from what they printed.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ohio::testing {

// One "ohio stages:" line as name -> value ("rank", "bytes", "calls", "total_us", "<stage>_us", ...).
using StageFields = std::map<std::string, double>;

// Every "ohio stages:" line of one rank's output, in order.
std::vector<StageFields> StageLines(const std::string& output);

// While it lives, the rank processes the test starts print their stage report.
class StageTimes {
 public:
  StageTimes();
  ~StageTimes();
};

}  // namespace ohio::testing
