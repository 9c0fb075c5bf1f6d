#include "shm/plan/algorithm.h"

namespace ohio {

const char* AlgorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kV1: return "v1";
    case Algorithm::kV2: return "v2";
    case Algorithm::kV3: return "v3";
  }
  return "?";
}

std::optional<Algorithm> ParseAlgorithm(const std::string& name) {
  if (name == "v1") return Algorithm::kV1;
  if (name == "v2") return Algorithm::kV2;
  if (name == "v3") return Algorithm::kV3;
  return std::nullopt;
}

}  // namespace ohio
