#include "client/ohio_plan/plan_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "shm/plan/bruck_plan.h"
#include "shm/plan/copy_plan.h"
#include "shm/plan/eager_plan.h"
#include "shm/plan/exchange_plan.h"
#include "shm/plan/group_shape.h"
#include "shm/plan/staging.h"

namespace ohio {
namespace {

Status Invalid(const std::string& message) { return Status(Code::kInvalidArgument, message); }

std::string Str(uint64_t v) { return std::to_string(v); }

// Every figure is at most max PPN x P x M (the node's whole alltoall); keeping that below
// 2^62 leaves room for the v3 halves (rounded up to a cache line, then doubled) without
// checking each product.
constexpr uint64_t kMaxAlltoallBytes = uint64_t{1} << 62;

Status CheckPpn(const std::vector<uint32_t>& ppn) {
  if (ppn.empty()) return Invalid("no nodes: a group needs at least one node");
  if (ppn.size() > kMaxPlanNodes) {
    return Invalid(Str(ppn.size()) + " nodes is more than the " + Str(kMaxPlanNodes) + " ohio-plan plans");
  }
  uint64_t ranks = 0;
  for (size_t n = 0; n < ppn.size(); ++n) {
    if (ppn[n] == 0) return Invalid("node " + Str(n) + " has no ranks; every node of a group holds at least one");
    if (ppn[n] > kMaxPlanPpn) {
      return Invalid("node " + Str(n) + " has " + Str(ppn[n]) + " ranks, more than the " + Str(kMaxPlanPpn) +
                     " per node ohio-plan plans");
    }
    ranks += ppn[n];
  }
  if (ranks > kMaxPlanRanks) {
    return Invalid(Str(ranks) + " ranks is more than the " + Str(kMaxPlanRanks) + " ohio-plan plans");
  }
  return Status::Ok();
}

// Largest block any node receives: the two largest PPNs of different nodes, times M.
uint64_t LargestBlock(const std::vector<uint32_t>& ppn, uint64_t m) {
  uint64_t first = 0, second = 0;
  for (uint32_t p : ppn) {
    if (p > first) {
      second = first;
      first = p;
    } else if (p > second) {
      second = p;
    }
  }
  return first * second * m;
}

NodeLevelDesign NodeLevel(Design d) {
  switch (d) {
    case Design::kV1: return NodeLevelDesign::kV1;
    case Design::kV2: return NodeLevelDesign::kV2;
    default: return NodeLevelDesign::kV3;
  }
}

NodePlan FlatNode(const GroupShape& shape, uint32_t n, uint64_t m) {
  NodePlan p;
  p.node = n;
  p.ppn = shape.ppn(n);
  p.connections = uint64_t{p.ppn} * (shape.size() - p.ppn);
  p.sends = p.connections;
  p.rounds = 1;
  p.bytes_on_wire = p.connections * m;
  return p;
}

// A round of the alltoall and how many rounds are like it.
struct RoundKind {
  uint64_t round;
  uint64_t count;
};

std::vector<RoundKind> RoundKinds(const Staging& st) {
  // The rounds of one slice differ in the rows and nodes they cover; every slice's are alike
  // but for a shorter last slice. So 2 x (rounds per slice) plans stand for all of them: a
  // 1 MiB alltoall at 128 x 56 is tens of thousands of rounds.
  const uint64_t per_slice = uint64_t{st.step_groups} * st.row_parts;
  const uint64_t slices = st.rounds / per_slice;
  const bool short_last = st.length(st.rounds - 1) != st.slice;
  const uint64_t full = short_last ? slices - 1 : slices;
  std::vector<RoundKind> kinds;
  for (uint64_t w = 0; w < per_slice; ++w) {
    if (full > 0) kinds.push_back({w, full});
    if (short_last) kinds.push_back({(slices - 1) * per_slice + w, 1});
  }
  return kinds;
}

// memcpys local rank r of node n makes in round `round`.
uint64_t RankCopies(const GroupShape& shape, NodeLevelDesign algo, uint32_t n, uint32_t r, const Staging& st,
                    uint64_t round, const std::vector<Delivery>& deliveries) {
  uint64_t copies = PlanCopyIn(shape, algo, n, r, st, round).size();
  copies += PlanCopyOutOnNode(shape, algo, n, r, st, round).size();
  for (const Delivery& d : deliveries) copies += PlanCopyOutDelivery(shape, n, r, st, round, d).size();
  return copies;
}

NodePlan NodeLevelNode(const GroupShape& shape, NodeLevelDesign algo, uint32_t n, const Staging& st, uint64_t srb_plan) {
  NodePlan p;
  p.node = n;
  p.ppn = shape.ppn(n);
  p.connections = shape.nodes() - 1;
  p.rounds = st.rounds;
  std::vector<uint64_t> copies(shape.ppn(n), 0);
  for (const RoundKind& k : RoundKinds(st)) {
    const RoundCover cover = st.cover(k.round);
    const std::vector<Put> puts = PlanPuts(shape, algo, n, cover, srb_plan);
    uint64_t wire = 0;
    for (const Put& put : puts) wire += put.bytes;
    p.sends += k.count * puts.size();
    p.bytes_on_wire += k.count * wire;
    p.ssb_bytes = std::max(p.ssb_bytes, SsbRoundBytes(shape, n, cover));
    const std::vector<Delivery> deliveries = PlanDeliveries(shape, algo, n, cover, srb_plan);
    for (uint32_t r = 0; r < shape.ppn(n); ++r) {
      const uint64_t c = RankCopies(shape, algo, n, r, st, k.round, deliveries);
      p.copies_per_round = std::max(p.copies_per_round, c);
      copies[r] += k.count * c;
    }
    uint64_t all = 0, largest = 0;
    for (const Delivery& d : deliveries) {
      all += d.bytes;
      largest = std::max(largest, d.bytes);
    }
    // v1/v2 keep every block of a round from the other nodes; v3 needs two halves, each only as large as
    // the largest piece that lands in one.
    const uint64_t srb = algo == NodeLevelDesign::kV3 ? 2 * std::min(SrbHalfBytes(srb_plan), largest) : all;
    p.srb_bytes = std::max(p.srb_bytes, srb);
  }
  p.copies = *std::max_element(copies.begin(), copies.end());
  return p;
}

// A hypercube round: one message per step, blocks forwarded (so bytes count every hop).
NodePlan HypercubeNode(const GroupShape& shape, uint32_t n, uint64_t m, uint64_t srb_plan) {
  NodePlan p;
  p.node = n;
  p.ppn = shape.ppn(n);
  p.connections = shape.nodes() - 1;
  p.rounds = 1;
  p.sends = BruckRounds(shape.nodes());
  p.bytes_on_wire = BruckBytesSent(shape, m, n);
  p.ssb_bytes = SsbRoundBytes(shape, n, m);
  p.srb_bytes = 2 * SrbHalfBytes(srb_plan);
  return p;
}

// "1 MiB", "1.5 KiB", "41 B": for people; the tables and JSON keep exact bytes.
std::string Human(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0 || v == static_cast<double>(static_cast<uint64_t>(v))) {
    std::snprintf(buf, sizeof buf, "%.0f %s", v, kUnits[u]);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
  }
  return buf;
}

std::string Bytes(uint64_t bytes) {
  return bytes < 1024 ? Str(bytes) + " B" : Str(bytes) + " B (" + Human(bytes) + ")";
}

std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      // The first column names nodes: left-aligned; numbers right-aligned.
      line += c == 0 ? row[c] + pad : "  " + pad + row[c];
    }
    out += line + "\n";
  }
  return out;
}

std::vector<std::string> Row(const std::string& name, const NodePlan& p) {
  return {name,          Str(p.ppn),           Str(p.connections),      Str(p.sends),
          Str(p.ssb_bytes), Str(p.srb_bytes),     Str(p.rounds),           Str(p.bytes_on_wire),
          Str(p.copies_per_round), Str(p.copies)};
}

// Nodes a round reaches and rows (ranks per node) it carries: every one unless the rounds
// were cut (PlanGroupStaging with a minimum slice).
uint64_t CoveredSteps(const PlanReport& r) {
  return r.staging.step_groups > 1 ? r.staging.steps : r.ppn.size();
}
uint64_t CoveredRows(const PlanReport& r) {
  if (r.staging.row_parts > 1) return r.staging.rows;
  return *std::max_element(r.ppn.begin(), r.ppn.end());
}

}  // namespace

const char* DesignName(Design d) {
  switch (d) {
    case Design::kV1: return "v1";
    case Design::kV2: return "v2";
    case Design::kV3: return "v3";
    case Design::kFlat: return "flat";
  }
  return "?";
}

std::optional<Design> ParseDesign(const std::string& name) {
  for (Design d : {Design::kV1, Design::kV2, Design::kV3, Design::kFlat}) {
    if (name == DesignName(d)) return d;
  }
  return std::nullopt;
}

bool NodePlan::SameFigures(const NodePlan& o) const {
  return ppn == o.ppn && connections == o.connections && sends == o.sends && ssb_bytes == o.ssb_bytes &&
         srb_bytes == o.srb_bytes && rounds == o.rounds && bytes_on_wire == o.bytes_on_wire &&
         copies_per_round == o.copies_per_round && copies == o.copies;
}

Result<std::vector<uint32_t>> UniformPpn(uint64_t nodes, uint64_t ppn) {
  if (nodes == 0 || ppn == 0) {
    return Invalid("no ranks: " + Str(nodes) + " nodes x " + Str(ppn) + " ranks per node; both must be at least 1");
  }
  if (nodes > kMaxPlanNodes) {
    return Invalid(Str(nodes) + " nodes is more than the " + Str(kMaxPlanNodes) + " ohio-plan plans");
  }
  if (ppn > kMaxPlanPpn) {
    return Invalid(Str(ppn) + " ranks per node is more than the " + Str(kMaxPlanPpn) + " ohio-plan plans");
  }
  return std::vector<uint32_t>(nodes, static_cast<uint32_t>(ppn));
}

Result<std::vector<uint32_t>> ParsePpnList(const std::string& list) {
  std::vector<uint32_t> ppn;
  size_t at = 0;
  while (true) {
    const size_t comma = std::min(list.find(',', at), list.size());
    const std::string item = list.substr(at, comma - at);
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos) {
      return Invalid("ranks per node list '" + list + "': item " + Str(ppn.size() + 1) + " ('" + item +
                     "') is not a number; expected e.g. 3,1,2");
    }
    // Longer than the limit's digits is out of range whatever the value; no overflow to check.
    const uint64_t v = item.size() > 9 ? uint64_t{kMaxPlanPpn} + 1 : std::stoull(item);
    if (v == 0) return Invalid("ranks per node list '" + list + "': node " + Str(ppn.size()) + " has no ranks");
    if (v > kMaxPlanPpn) {
      return Invalid("ranks per node list '" + list + "': node " + Str(ppn.size()) + " has more than the " +
                     Str(kMaxPlanPpn) + " ranks per node ohio-plan plans");
    }
    ppn.push_back(static_cast<uint32_t>(v));
    if (comma == list.size()) break;
    at = comma + 1;
  }
  return ppn;
}

Result<PlanReport> MakePlanReport(const PlanRequest& req) {
  if (Status s = CheckPpn(req.ppn); !s.ok()) return s;
  std::vector<uint32_t> rank_node;
  for (uint32_t n = 0; n < req.ppn.size(); ++n) rank_node.insert(rank_node.end(), req.ppn[n], n);
  Result<GroupShape> made = GroupShape::Make(static_cast<uint32_t>(req.ppn.size()), std::move(rank_node));
  if (!made.ok()) return made.status();
  const GroupShape& shape = made.value();
  const uint64_t m = req.bytes_per_rank;
  const uint64_t messages = MinSsbBytes(shape);
  if (m > kMaxAlltoallBytes / messages) {
    return Invalid("M = " + Str(m) + " bytes x " + Str(messages) + " messages of the largest node exceeds 2^62 bytes");
  }

  PlanReport r;
  r.ppn = req.ppn;
  r.bytes_per_rank = m;
  r.design = req.design;
  r.slice = m;
  if (req.design == Design::kFlat) {
    // Ranks talk to each other directly: no daemon, no shared buffers, nothing to stage.
    for (uint32_t n = 0; n < shape.nodes(); ++n) r.nodes.push_back(FlatNode(shape, n, m));
  } else {
    const NodeLevelDesign algo = NodeLevel(req.design);
    r.ssb_limit = req.ssb_bytes;
    r.srb_limit = req.srb_bytes;
    // The planners refuse budgets below one byte per message even for M = 0.
    const uint64_t m1 = std::max<uint64_t>(m, 1);
    // Unbounded: one round (a group on one node stages in two halves of its SSB).
    const uint64_t ssb_plan =
        req.ssb_bytes.value_or(shape.nodes() == 1 ? 2 * ((messages * m1 + 63) / 64 * 64) : messages * m1);
    uint64_t srb_plan = 0;
    if (req.srb_bytes) {
      srb_plan = *req.srb_bytes;
    } else if (shape.nodes() > 1 && algo == NodeLevelDesign::kV3) {
      // SrbHalfBytes rounds a half down to a cache line: round up so the largest block fits.
      const uint64_t half = std::max<uint64_t>(64, (LargestBlock(req.ppn, m) + 63) / 64 * 64);
      srb_plan = 2 * half;
    } else {
      srb_plan = MinSrbBytes(shape, algo) * m1;
    }
    Result<Staging> staging = PlanGroupStaging(shape, algo, ssb_plan, srb_plan, m, req.min_slice_bytes);
    if (!staging.ok()) return staging.status();
    r.slice = staging->length(0);
    const EagerLayout eager = PlanEagerLayout(shape, ssb_plan, srb_plan);
    if (shape.nodes() > 1) r.internode = RoundInterNodeAlgorithm(shape, algo, eager, req.internode_table, m, FitsEager(shape, eager, m));
    r.min_slice = req.min_slice_bytes;
    r.staging = staging.value();
    // With consecutive placement a node's figures depend only on its own PPN and the multiset
    // of the others' (blocks are PPN_n x PPN_q, v1 puts one per row per destination node), so
    // one node per distinct PPN is planned: 128 x 56 costs one node's O(N^2) puts, not 128.
    std::map<uint32_t, NodePlan> by_ppn;
    for (uint32_t n = 0; n < shape.nodes(); ++n) {
      // A hypercube node's messages carry blocks of nodes at distances with its step's bit set:
      // its figures depend on who those are, not only on its own PPN.
      auto it = req.every_node || r.internode == InterNodeAlgorithm::kHypercube ? by_ppn.end() : by_ppn.find(shape.ppn(n));
      NodePlan p = it != by_ppn.end()                  ? it->second
                   : r.internode == InterNodeAlgorithm::kHypercube ? HypercubeNode(shape, n, m, srb_plan)
                                                    : NodeLevelNode(shape, algo, n, staging.value(), srb_plan);
      p.node = n;
      by_ppn.emplace(p.ppn, p);
      r.nodes.push_back(p);
    }
  }
  r.max = r.nodes[0];
  for (const NodePlan& p : r.nodes) {
    if (p.ppn > r.max.ppn) {
      r.max.ppn = p.ppn;
      r.max.node = p.node;
    }
    r.max.connections = std::max(r.max.connections, p.connections);
    r.max.sends = std::max(r.max.sends, p.sends);
    r.max.ssb_bytes = std::max(r.max.ssb_bytes, p.ssb_bytes);
    r.max.srb_bytes = std::max(r.max.srb_bytes, p.srb_bytes);
    r.max.rounds = std::max(r.max.rounds, p.rounds);
    r.max.bytes_on_wire = std::max(r.max.bytes_on_wire, p.bytes_on_wire);
    r.max.copies_per_round = std::max(r.max.copies_per_round, p.copies_per_round);
    r.max.copies = std::max(r.max.copies, p.copies);
  }
  return r;
}

// The figures one node (or the maximum over nodes) takes, under their JSON names.
void PutFigures(nlohmann::ordered_json* j, const NodePlan& p) {
  (*j)["connections_per_node"] = p.connections;
  (*j)["sends_per_node"] = p.sends;
  (*j)["ssb_bytes"] = p.ssb_bytes;
  (*j)["srb_bytes"] = p.srb_bytes;
  (*j)["rounds"] = p.rounds;
  (*j)["bytes_on_wire"] = p.bytes_on_wire;
  (*j)["copies_per_round"] = p.copies_per_round;
  (*j)["copies"] = p.copies;
}

std::string RenderJson(const PlanReport& r) {
  uint64_t ranks = 0;
  for (uint32_t p : r.ppn) ranks += p;
  auto optional = [](const std::optional<uint64_t>& v) { return v ? nlohmann::ordered_json(*v) : nullptr; };
  nlohmann::ordered_json j;
  j["nodes"] = r.ppn.size();
  j["ranks"] = ranks;
  j["ppn"] = r.ppn;
  j["bytes"] = r.bytes_per_rank;
  j["algo"] = DesignName(r.design);
  j["ssb_limit"] = optional(r.ssb_limit);
  j["srb_limit"] = optional(r.srb_limit);
  j["slice"] = r.slice;
  j["min_slice"] = r.min_slice;
  j["steps_per_round"] = CoveredSteps(r);
  j["rows_per_round"] = CoveredRows(r);
  j["per_node"] = nlohmann::ordered_json::array();
  for (const NodePlan& p : r.nodes) {
    nlohmann::ordered_json node;
    node["node"] = p.node;
    node["ppn"] = p.ppn;
    PutFigures(&node, p);
    j["per_node"].push_back(std::move(node));
  }
  PutFigures(&j, r.max);
  return j.dump() + "\n";
}

std::string RenderText(const PlanReport& r, bool per_node) {
  uint64_t ranks = 0;
  bool uniform = true;
  for (uint32_t p : r.ppn) {
    ranks += p;
    uniform = uniform && p == r.ppn[0];
  }
  std::string out = std::string("algorithm ") + DesignName(r.design) + ": " + Str(r.ppn.size()) + " nodes x ";
  out += uniform ? Str(r.ppn[0]) : "uneven";
  out += " ranks per node = " + Str(ranks) + " ranks, M = " + Bytes(r.bytes_per_rank) + " per rank pair\n";
  if (r.design == Design::kFlat) {
    out += "flat: no daemon and no shared buffers; connections and sends are every rank's to every rank on the other nodes\n";
  } else {
    auto limit = [](const std::optional<uint64_t>& v) { return v ? Bytes(*v) : std::string("unbounded"); };
    out += "memory: ssb " + limit(r.ssb_limit) + ", srb " + limit(r.srb_limit) + " -> " + Str(r.max.rounds) +
           (r.max.rounds == 1 ? " round" : " rounds") + " of " + Str(r.slice) + " B per message\n";
    out += "rounds: each carries up to " + Str(CoveredRows(r)) + " ranks' messages per node to " +
           Str(CoveredSteps(r)) + " of " + Str(r.ppn.size()) + " nodes (minimum slice " + Str(r.min_slice) + " B)\n";
  }
  std::vector<std::vector<std::string>> rows = {{"node", "ppn", "connections", "sends", "ssb_bytes", "srb_bytes",
                                                 "rounds", "bytes_on_wire", "copies/round", "copies"}};
  for (size_t i = 0; i < r.nodes.size();) {
    size_t j = i + 1;
    while (!per_node && j < r.nodes.size() && r.nodes[j].SameFigures(r.nodes[i])) ++j;
    const std::string name = j - i == 1 ? Str(r.nodes[i].node) : Str(r.nodes[i].node) + "-" + Str(r.nodes[j - 1].node);
    rows.push_back(Row(name, r.nodes[i]));
    i = j;
  }
  if (rows.size() > 2) rows.push_back(Row("max", r.max));
  out += Table(rows);
  out += "sends and bytes_on_wire are per alltoall (all rounds); ssb_bytes and srb_bytes are what one round occupies\n";
  out += "copies/round and copies are one rank's memcpys, in its busiest round and in the whole alltoall\n";
  return out;
}

}  // namespace ohio
