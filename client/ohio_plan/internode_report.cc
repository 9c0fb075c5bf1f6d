#include "client/ohio_plan/internode_report.h"

#include <algorithm>
#include <cstdio>

#include "shm/plan/bruck_plan.h"
#include "shm/plan/group_shape.h"
#include "shm/tables/internode_table_text.h"
#include "shm/plan/vector_cube.h"

namespace ohio {
namespace {

constexpr uint64_t kSweepTop = 16u << 20;

GroupShape ShapeOf(const std::vector<uint32_t>& ppn) {
  std::vector<uint32_t> rank_node;
  for (uint32_t n = 0; n < ppn.size(); ++n) rank_node.insert(rank_node.end(), ppn[n], n);
  return GroupShape::Make(static_cast<uint32_t>(ppn.size()), rank_node).value();
}

// Pairwise and direct send the same blocks, one message per other node.
uint64_t DirectBytes(const std::vector<uint32_t>& ppn, uint64_t m, uint32_t node) {
  uint64_t ranks = 0;
  for (uint32_t p : ppn) ranks += p;
  return m * ppn[node] * (ranks - ppn[node]);
}

std::string RuleText(const InterNodeTable& table, int row) {
  if (row < 0) return "no row matches: pairwise";
  return "row " + std::to_string(row + 1) + ": " + FormatInterNodeRule(table.rules[row]) +
         (table.rules[row].simulated ? "; a row ohio-sim simulated, not measured" : "");
}

// What the daemons run for a call of m, decided as the exchange decides it (daemon/exchange/exchange.cc).
RoundInterNodeChoice RoundChoice(const GroupShape& shape, const InterNodeBuffers& b, const InterNodeTable& table, uint64_t m) {
  const EagerLayout layout = PlanEagerLayout(shape, b.ssb_bytes, b.srb_bytes);
  return ExplainRoundInterNodeAlgorithm(shape, b.algo, layout, table, m, FitsEager(shape, layout, m));
}

std::string MissText(HypercubeMiss miss) {
  switch (miss) {
    case HypercubeMiss::kNone:
      break;
    case HypercubeMiss::kNotEager:
      return "the call is not one eager round with these buffers";
    case HypercubeMiss::kV1Layout:
      return "v1's SSB is not laid out per node";
    case HypercubeMiss::kInboxTooSmall:
      return "its messages do not fit the SRB half's inboxes, or the ranks' rows the SSB half";
  }
  return "";
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string PadLeft(const std::string& s, size_t width) {
  return s.size() < width ? std::string(width - s.size(), ' ') + s : s;
}

}  // namespace

Result<InterNodeExplanation> ExplainInterNodeAlgorithm(const InterNodeTable& table, const std::vector<uint32_t>& ppn,
                                        uint64_t bytes_per_rank, const InterNodeBuffers& buffers) {
  if (ppn.size() < 2) {
    return Status(Code::kInvalidArgument, "a group on " + std::to_string(ppn.size()) +
                                              " node runs no inter-node algorithm: --explain needs 2 nodes or more");
  }
  const GroupShape shape = ShapeOf(ppn);
  InterNodeExplanation e;
  e.ppn = ppn;
  e.bytes_per_rank = bytes_per_rank;
  e.buffers = buffers;
  e.block_bytes = InterNodeBlockBytes(shape, bytes_per_rank);
  e.row = MatchingInterNodeRule(table, shape.nodes(), e.block_bytes);
  e.choice = RoundChoice(shape, buffers, table, bytes_per_rank);
  const uint64_t others = shape.nodes() - 1;
  // Every node of a group with one PPN sends alike; otherwise the most any node sends.
  const bool even = std::all_of(ppn.begin(), ppn.end(), [&](uint32_t p) { return p == ppn[0]; });
  uint64_t direct = 0, hypercube = 0;
  for (uint32_t n = 0; n < (even ? 1u : shape.nodes()); ++n) {
    direct = std::max(direct, DirectBytes(ppn, bytes_per_rank, n));
    hypercube = std::max(hypercube, BruckBytesSent(shape, bytes_per_rank, n));
  }
  const uint64_t rounds = BruckRounds(shape.nodes());
  e.costs = {InterNodeCost{InterNodeAlgorithm::kPairwise, others, others, direct}, InterNodeCost{InterNodeAlgorithm::kHypercube, rounds, rounds, hypercube},
             InterNodeCost{InterNodeAlgorithm::kDirect, others, 1, direct}};
  e.vector_cube_cap = VectorCubeBlockCap(shape, PlanEagerLayout(shape, buffers.ssb_bytes, buffers.srb_bytes), table);
  return e;
}

std::string RenderInterNodeExplanation(const InterNodeTable& table, const std::string& source,
                                    const InterNodeExplanation& e) {
  const GroupShape shape = ShapeOf(e.ppn);
  std::string out = "inter-node table: " + source + ", digest " + InterNodeTableDigest(table) + "\n";
  if (table.rules.empty()) out += "  (no rows: pairwise for every call)\n";
  for (size_t i = 0; i < table.rules.size(); ++i) {
    out += "  row " + std::to_string(i + 1) + ": " + FormatInterNodeRule(table.rules[i]) + "\n";
  }
  out += "  (nodes max-block algorithm; the block is M x max ppn x max ppn; the first matching row wins, none: "
         "pairwise)\n\n";
  const std::string ppn = std::to_string(shape.max_ppn());
  out += "group: " + std::to_string(shape.nodes()) + " nodes, at most " + ppn + " ranks per node, M = " +
         std::to_string(e.bytes_per_rank) + " B: block " + std::to_string(e.block_bytes) + " B (M x " + ppn + " x " +
         ppn + ")\n";
  out += std::string("buffers: ") + NodeLevelDesignName(e.buffers.algo) + ", SSB " + std::to_string(e.buffers.ssb_bytes) +
         " B, SRB " + std::to_string(e.buffers.srb_bytes) + " B per group and node\n";
  out += std::string("chosen: ") + InterNodeAlgorithmName(e.choice.runs) + " (" + RuleText(table, e.row);
  if (e.choice.miss != HypercubeMiss::kNone) {
    out += std::string(", but the ") + InterNodeAlgorithmName(e.choice.table) + " does not fit: " + MissText(e.choice.miss);
  }
  out += ")\n";
  if (e.vector_cube_cap != 0) {
    out += "alltoallv: hypercube while every node-to-node block is at most " + std::to_string(e.vector_cube_cap) +
           " B (the blocks' sizes travel in its messages), else pairwise\n\n";
  } else {
    out += "alltoallv: pairwise (the table runs no hypercube for this group, or its inboxes hold no block)\n\n";
  }
  out += "per node per call   messages  steps  bytes sent\n";
  for (const InterNodeCost& c : e.costs) {
    out += "  " + Pad(InterNodeAlgorithmName(c.internode), 16) + PadLeft(std::to_string(c.messages), 9) +
           PadLeft(std::to_string(c.steps), 7) + PadLeft(std::to_string(c.bytes), 12) +
           (c.internode == e.choice.runs ? "  <- chosen" : "") + "\n";
  }
  out += "  (pairwise: one message to each other node, one after another; hypercube: ceil(log2 N) messages, "
         "blocks forwarded; direct: every message posted at once behind a window)\n\n";
  out += "sweep of M for this group:\n  " + Pad("M", 12) + Pad("block", 14) + Pad("algorithm", 11) + "why\n";
  for (uint64_t m = 1; m <= kSweepTop; m *= 4) {
    const uint64_t block = InterNodeBlockBytes(shape, m);
    const int row = MatchingInterNodeRule(table, shape.nodes(), block);
    const RoundInterNodeChoice c = RoundChoice(shape, e.buffers, table, m);
    out += "  " + Pad(std::to_string(m), 12) + Pad(std::to_string(block), 14) + Pad(InterNodeAlgorithmName(c.runs), 11) +
           (row < 0 ? std::string("no row") : "row " + std::to_string(row + 1)) +
           (row >= 0 && table.rules[row].simulated ? " (simulated)" : "") +
           (c.miss == HypercubeMiss::kNone ? "" : std::string(", ") + InterNodeAlgorithmName(c.table) + " does not fit") + "\n";
  }
  return out;
}

}  // namespace ohio
