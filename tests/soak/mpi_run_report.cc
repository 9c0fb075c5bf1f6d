#include "tests/soak/mpi_run_report.h"

#include <regex>
#include <sstream>

namespace ohio::soak {

std::map<uint32_t, MpiRankReport> ParseMpiRun(const std::string& output) {
  static const std::regex kTagged(R"(^\[\d+,(\d+)\]<(stdout|stderr)>:(.*)$)");
  static const std::regex kFailed(R"(^rank \d+: call \d+ failed with (MPI_ERR_OTHER|class -?\d+)$)");
  static const std::regex kTally(R"(^rank \d+: calls (\d+) ok (\d+) failed (\d+) wrong_bytes (\d+)$)");
  static const std::string kReason = "ohio: MPI_Alltoall failed: ";
  std::map<uint32_t, MpiRankReport> ranks;
  std::istringstream in(output);
  std::string line;
  std::smatch tag, m;
  while (std::getline(in, line)) {
    if (!std::regex_match(line, tag, kTagged)) continue;
    MpiRankReport& r = ranks[static_cast<uint32_t>(std::stoul(tag[1]))];
    const std::string text = tag[3];
    if (tag[2] == "stderr") {
      if (text.rfind(kReason, 0) == 0) r.reasons.push_back(text.substr(kReason.size()));
    } else if (std::regex_match(text, m, kFailed)) {
      r.failed_with.push_back(m[1]);
    } else if (std::regex_match(text, m, kTally)) {
      r.tally = MpiRankTally{static_cast<uint32_t>(std::stoul(m[1])), static_cast<uint32_t>(std::stoul(m[2])),
                             static_cast<uint32_t>(std::stoul(m[3])), std::stoull(m[4])};
    }
  }
  return ranks;
}

}  // namespace ohio::soak
