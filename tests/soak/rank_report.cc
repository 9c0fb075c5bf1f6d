#include "tests/soak/rank_report.h"

#include <regex>
#include <sstream>

namespace ohio::soak {

RankReport ParseRankReport(const std::string& output) {
  static const std::regex kError(R"(^rank \d+: (connect|join|alltoall|leave) error code=\d+ \(([^)]*)\) ?(.*)$)");
  static const std::regex kVerified(R"(^rank \d+: verified (\d+) calls$)");
  RankReport report;
  std::istringstream in(output);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, kError)) {
      report.error = RankError{m[1], m[2], m[3]};
    } else if (std::regex_match(line, m, kVerified)) {
      report.verified = static_cast<uint32_t>(std::stoul(m[1]));
    } else if (line.find(": WRONG byte ") != std::string::npos) {
      ++report.wrong_bytes;
    }
  }
  return report;
}

}  // namespace ohio::soak
