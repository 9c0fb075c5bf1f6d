#include "daemon/ops/internode_policy.h"

#include "shm/plan/internode_table_text.h"

namespace ohio {

InterNodePolicy ChooseInterNodePolicy(const DaemonConfig& config, std::optional<InterNodeAlgorithm> forced_by_ranks) {
  InterNodePolicy p;
  const std::optional<InterNodeAlgorithm> configured = ParseInterNodeAlgorithmName(config.internode);
  if (forced_by_ranks) {
    p.table = ForcedInterNodeTable(*forced_by_ranks);
    p.source = std::string("OHIO_INTERNODE_ALGORITHM=") + InterNodeAlgorithmName(*forced_by_ranks) + " of the job's ranks";
  } else if (configured) {
    p.table = ForcedInterNodeTable(*configured);
    p.source = "internode-algorithm = " + config.internode;
  } else if (!config.internode_table.empty()) {
    p.table = config.internode_rules;
    p.source = "the table " + config.internode_table;
  } else {
    p.table = config.internode_rules;
    p.source = "the built-in table";
  }
  // Not part of the digest (which covers the rows only): each node bounds its own sends.
  p.table.direct_window = config.direct_window;
  p.digest = InterNodeTableDigest(p.table);
  return p;
}

std::string InterNodeDisagreement(const std::string& key_hex, const std::vector<std::string>& node_names, uint32_t a,
                               const std::string& a_source, const std::string& a_digest, uint32_t b,
                               const std::string& b_source, const std::string& b_digest) {
  if (b < a) return InterNodeDisagreement(key_hex, node_names, b, b_source, b_digest, a, a_source, a_digest);
  auto node = [&](uint32_t n, const std::string& source, const std::string& digest) {
    return "node " + node_names[n] + " by " + (source.empty() ? "no table it tells (an older ohiod)" : source) +
           " (digest " + (digest.empty() ? "none" : digest) + ")";
  };
  return "the nodes of group " + key_hex + " choose inter-node algorithms differently, " + node(a, a_source, a_digest) +
         ", " + node(b, b_source, b_digest) +
         ": every node of a group needs the same internode-table and internode-algorithm settings (or the job sets OHIO_INTERNODE_ALGORITHM)";
}

}  // namespace ohio
