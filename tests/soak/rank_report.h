// What one rank of a soak job said (tests/tools/alltoall_rank with --random-bytes): how many
// calls it verified, the error that ended it if one did, and every wrong byte it saw.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ohio::soak {

struct RankError {
  std::string step;       // connect, join, alltoall or leave
  std::string code_name;  // ohio_strerror() of the code
  std::string message;    // ohio_last_error()
};

struct RankReport {
  std::optional<uint32_t> verified;  // unset if the rank never said (it was killed, or crashed)
  std::optional<RankError> error;
  uint32_t wrong_bytes = 0;          // "WRONG byte" lines; the rank stops at the first
};

RankReport ParseRankReport(const std::string& output);

}  // namespace ohio::soak
