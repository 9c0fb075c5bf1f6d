#include "common/unauthenticated_cap.h"

namespace ohio {

std::optional<CapRefusal> JudgeUnauthenticated(size_t total, size_t of_source, uint32_t max, const std::string& host,
                                               const std::string& setting, const std::string& unproven) {
  if (total >= max) {
    return CapRefusal{ConnectionRefusal::kTotalCap,
                      std::to_string(total) + " connections " + unproven + "; " + setting + " = " + std::to_string(max)};
  }
  if (of_source >= PerSourceShare(max)) {
    return CapRefusal{ConnectionRefusal::kSourceCap, host + " has " + std::to_string(of_source) + " connections that " +
                                                         unproven + ", half of " + setting + " = " + std::to_string(max)};
  }
  return std::nullopt;
}

}  // namespace ohio
