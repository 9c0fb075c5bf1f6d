#include "daemon/ops/leader_policy.h"

#include "shm/plan/leader_table_text.h"

namespace ohio {

LeaderPolicy ChooseLeaderPolicy(const DaemonConfig& config, std::optional<Leader> forced_by_ranks) {
  LeaderPolicy p;
  const std::optional<Leader> configured = ParseLeaderName(config.leader);
  if (forced_by_ranks) {
    p.table = ForcedLeaderTable(*forced_by_ranks);
    p.source = std::string("OHIO_LEADER=") + LeaderName(*forced_by_ranks) + " of the job's ranks";
  } else if (configured) {
    p.table = ForcedLeaderTable(*configured);
    p.source = "leader = " + config.leader;
  } else if (!config.leader_table.empty()) {
    p.table = config.leader_rules;
    p.source = "the table " + config.leader_table;
  } else {
    p.table = config.leader_rules;
    p.source = "the built-in table";
  }
  // Not part of the digest (which covers the rows only): each node bounds its own sends.
  p.table.direct_window = config.direct_window;
  p.digest = LeaderTableDigest(p.table);
  return p;
}

std::string LeaderDisagreement(const std::string& key_hex, const std::vector<std::string>& node_names, uint32_t a,
                               const std::string& a_source, const std::string& a_digest, uint32_t b,
                               const std::string& b_source, const std::string& b_digest) {
  if (b < a) return LeaderDisagreement(key_hex, node_names, b, b_source, b_digest, a, a_source, a_digest);
  auto node = [&](uint32_t n, const std::string& source, const std::string& digest) {
    return "node " + node_names[n] + " by " + (source.empty() ? "no table it tells (an older ohiod)" : source) +
           " (digest " + (digest.empty() ? "none" : digest) + ")";
  };
  return "the nodes of group " + key_hex + " choose leader algorithms differently, " + node(a, a_source, a_digest) +
         ", " + node(b, b_source, b_digest) +
         ": every node of a group needs the same leader-table and leader settings (or the job sets OHIO_LEADER)";
}

}  // namespace ohio
