// The inter-node table a group's daemons run (shm/tables/internode_choice.h) and where it comes from: the
// job's ranks forcing one algorithm (OHIO_INTERNODE_ALGORITHM, carried in their join), else this node's
// `internode-algorithm` setting forcing one, else its `internode-table` file, else the built-in table. The
// nodes of a group compare the digests at setup (daemon/peers/peer_bootstrap.h; the message when they
// differ: daemon/ops/table_disagreement.h): the choice is made on every node from its own table, so a
// node whose table differs would run another algorithm than the others and the group's round would
// never complete.
#pragma once

#include <optional>
#include <string>

#include "daemon/ops/config.h"
#include "shm/tables/internode_choice.h"

namespace ohio {

struct InterNodePolicy {
  InterNodeTable table;
  std::string source;  // for people: "the built-in table", "internode-algorithm = direct", ...
  std::string digest;  // InterNodeTableDigest(table)
};

InterNodePolicy ChooseInterNodePolicy(const DaemonConfig& config, std::optional<InterNodeAlgorithm> forced_by_ranks);

}  // namespace ohio
