#include "daemon/ops/internode_policy.h"

#include "shm/tables/internode_table_text.h"

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

}  // namespace ohio
