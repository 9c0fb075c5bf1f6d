#include "tests/harness/stage_lines.h"

#include <cstdlib>
#include <sstream>

namespace ohio::testing {

std::vector<StageFields> StageLines(const std::string& output) {
  std::vector<StageFields> lines;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("ohio stages: ", 0) != 0) continue;
    std::istringstream words(line.substr(13));
    StageFields fields;
    std::string key;
    double value = 0;
    while (words >> key >> value) fields[key] = value;
    lines.push_back(std::move(fields));
  }
  return lines;
}

StageTimes::StageTimes() { setenv("OHIO_STAGE_TIMES", "1", 1); }
StageTimes::~StageTimes() { unsetenv("OHIO_STAGE_TIMES"); }

}  // namespace ohio::testing
