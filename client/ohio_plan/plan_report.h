// What one alltoall costs each node (the paper's Table III: connections, posted sends, memory),
// computed with the planners ohiod itself runs (shm/), so ohio-plan's figures are the daemon's.
// Pure: no I/O and no buffers of M bytes, so it answers for clusters this machine cannot hold.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "shm/plan/node_level_design.h"
#include "shm/tables/internode_choice.h"
#include "shm/plan/staging.h"

namespace ohio {

// The paper's three node-level designs, and the flat baseline they are measured against:
// every rank keeps its own connection to, and posts its own send to, every rank on the other nodes.
enum class Design { kV1, kV2, kV3, kFlat };

const char* DesignName(Design d);
std::optional<Design> ParseDesign(const std::string& name);

// Limits that keep a dry run within seconds: the planners' puts are O(N^2) per node (v1:
// O(N^2*PPN)), and ohiod by default refuses groups of more than 2^20 ranks (max_group_ranks).
constexpr uint32_t kMaxPlanNodes = 4096;
constexpr uint32_t kMaxPlanRanks = 1u << 20;
constexpr uint32_t kMaxPlanPpn = 1024;

struct PlanRequest {
  std::vector<uint32_t> ppn;  // ranks per node; ranks are placed consecutively, node by node
  uint64_t bytes_per_rank = 0;  // M
  Design design = Design::kV3;
  // Unset: unbounded, i.e. one round and no chunking (see MakePlanReport).
  std::optional<uint64_t> ssb_bytes;
  std::optional<uint64_t> srb_bytes;
  // PlanGroupStaging's min_slice: ohiod's (0: every round carries a slice of every message,
  // however short, as ohiod did before it had a minimum).
  uint64_t min_slice_bytes = kDefaultMinSliceBytes;
  // Plan every node rather than one per distinct PPN (identical by construction; for tests).
  bool every_node = false;
  // The daemons' inter-node table (shm/tables/internode_choice.h).
  InterNodeTable internode_table = DefaultInterNodeTable();
};

// Figures of one node for one alltoall.
struct NodePlan {
  uint32_t node = 0;
  uint32_t ppn = 0;
  uint64_t connections = 0;    // connections the node's daemon (flat: its ranks) holds
  uint64_t sends = 0;          // puts posted per alltoall, every round counted
  uint64_t ssb_bytes = 0;      // SSB one round occupies
  uint64_t srb_bytes = 0;      // SRB one round needs
  uint64_t rounds = 0;         // staging rounds per alltoall
  uint64_t bytes_on_wire = 0;  // bytes the node sends to other nodes per alltoall
  // memcpys one of the node's ranks makes (copy-in, on-node and across-nodes copy-out): the most in
  // one round, and in the whole alltoall; the most over the node's ranks (flat: none).
  uint64_t copies_per_round = 0;
  uint64_t copies = 0;

  // Equal figures, whichever node.
  bool SameFigures(const NodePlan& o) const;
};

struct PlanReport {
  std::vector<uint32_t> ppn;
  uint64_t bytes_per_rank = 0;
  Design design = Design::kV3;
  std::optional<uint64_t> ssb_limit;
  std::optional<uint64_t> srb_limit;
  uint64_t slice = 0;  // bytes of each message a full round carries (M when one round)
  InterNodeAlgorithm internode = InterNodeAlgorithm::kPairwise;  // what the daemons run among nodes
  uint64_t min_slice = 0;
  Staging staging;     // how the rounds are cut (node-level designs)
  std::vector<NodePlan> nodes;
  NodePlan max;  // every figure's maximum over the nodes (node and ppn: of the largest node)
};

// Ranks per node from --nodes/--ppn and from a list such as "3,1,2".
Result<std::vector<uint32_t>> UniformPpn(uint64_t nodes, uint64_t ppn);
Result<std::vector<uint32_t>> ParsePpnList(const std::string& list);

// Plans the alltoall the way ohiod does. Without limits the SSB holds the whole alltoall and
// the SRB what the design needs for it (v1/v2: every block from the other nodes; v3: two halves as large as
// the largest block), so rounds == 1 and nothing is chunked. Errors: an empty or oversized
// group, or a limit the planners refuse (the message says which and by how much).
Result<PlanReport> MakePlanReport(const PlanRequest& request);

std::string RenderJson(const PlanReport& report);
// A table; nodes with equal figures are folded into ranges unless per_node.
std::string RenderText(const PlanReport& report, bool per_node);

}  // namespace ohio
