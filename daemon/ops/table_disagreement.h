// What the ranks of a group are told when two of its nodes hold different tables of a kind
// every node of a group must share (the inter-node table, the selection table): the daemons
// compare digests at setup, and whichever node finds the difference, every node words it
// alike, so that each rank of the group reads the same cause.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ohio {

// The kind of table compared, as the message names it.
struct ComparedTable {
  const char* differ;  // what the nodes do differently: "choose inter-node algorithms differently"
  const char* remedy;  // what every node needs: "every node of a group needs the same ..."
};
extern const ComparedTable kInterNodeTableCompared;
extern const ComparedTable kSelectionTableCompared;

// One node's table: the node's index in the group, where its table comes from ("" from an
// ohiod that tells none) and its digest.
struct NodeTable {
  uint32_t node = 0;
  std::string source;
  std::string digest;
};

// Both nodes, lower index first.
std::string TableDisagreement(const ComparedTable& what, const std::string& key_hex,
                              const std::vector<std::string>& node_names, const NodeTable& a, const NodeTable& b);

}  // namespace ohio
