#include "shm/plan/node_level_design.h"

namespace ohio {

const char* NodeLevelDesignName(NodeLevelDesign d) {
  switch (d) {
    case NodeLevelDesign::kV1: return "v1";
    case NodeLevelDesign::kV2: return "v2";
    case NodeLevelDesign::kV3: return "v3";
  }
  return "?";
}

std::optional<NodeLevelDesign> ParseNodeLevelDesign(const std::string& name) {
  if (name == "v1") return NodeLevelDesign::kV1;
  if (name == "v2") return NodeLevelDesign::kV2;
  if (name == "v3") return NodeLevelDesign::kV3;
  return std::nullopt;
}

}  // namespace ohio
