// The leader table a group's daemons run (shm/plan/leader_choice.h) and where it comes from: the
// job's ranks forcing one algorithm (OHIO_LEADER, carried in their join), else this node's
// `leader` setting forcing one, else its `leader-table` file, else the built-in table. The
// nodes of a group compare the digests at setup (daemon/peers/peer_bootstrap.h): the choice is made
// on every node from its own table, so a node whose table differs would run another algorithm
// than the others and the group's round would never complete.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "daemon/ops/config.h"
#include "shm/plan/leader_choice.h"

namespace ohio {

struct LeaderPolicy {
  LeaderTable table;
  std::string source;  // for people: "the built-in table", "leader = direct", ...
  std::string digest;  // LeaderTableDigest(table)
};

LeaderPolicy ChooseLeaderPolicy(const DaemonConfig& config, std::optional<Leader> forced_by_ranks);

// What the ranks of a group are told when two of its nodes run different tables: both nodes,
// lower index first, so that every node that finds it words it alike.
std::string LeaderDisagreement(const std::string& key_hex, const std::vector<std::string>& node_names, uint32_t a,
                               const std::string& a_source, const std::string& a_digest, uint32_t b,
                               const std::string& b_source, const std::string& b_digest);

}  // namespace ohio
