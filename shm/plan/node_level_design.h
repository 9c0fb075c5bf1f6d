// The node-level alltoall designs of the OHIO paper (docs/GLOSSARY.md: v1, v2, v3), as the
// daemon and the planner name them: how a node's ranks and its daemon share the SSB and SRB.
// How the daemons then exchange blocks is the inter-node algorithm (shm/tables/internode_choice.h).
#pragma once

#include <optional>
#include <string>

namespace ohio {

enum class NodeLevelDesign {
  kV1,  // SSB holds each rank's send buffer as is: one send per (local rank, remote node)
  kV2,  // SSB coalesced per destination node: one send per remote node; SRB holds all blocks
  kV3,  // as V2, but the SRB is two block-sized halves reused step after step
};

const char* NodeLevelDesignName(NodeLevelDesign d);
std::optional<NodeLevelDesign> ParseNodeLevelDesign(const std::string& name);

}  // namespace ohio
