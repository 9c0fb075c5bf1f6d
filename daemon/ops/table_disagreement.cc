#include "daemon/ops/table_disagreement.h"

namespace ohio {

const ComparedTable kInterNodeTableCompared = {
    "choose inter-node algorithms differently",
    "every node of a group needs the same internode-table and internode-algorithm settings (or the job sets "
    "OHIO_INTERNODE_ALGORITHM)"};
const ComparedTable kSelectionTableCompared = {
    "decide differently which calls ohio serves",
    "every node of a group needs the same selection-table rows (spelling and comments aside)"};

std::string TableDisagreement(const ComparedTable& what, const std::string& key_hex,
                              const std::vector<std::string>& node_names, const NodeTable& a, const NodeTable& b) {
  if (b.node < a.node) return TableDisagreement(what, key_hex, node_names, b, a);
  auto node = [&](const NodeTable& t) {
    return "node " + node_names[t.node] + " by " + (t.source.empty() ? "no table it tells (an older ohiod)" : t.source) +
           " (digest " + (t.digest.empty() ? "none" : t.digest) + ")";
  };
  return "the nodes of group " + key_hex + " " + what.differ + ", " + node(a) + ", " + node(b) + ": " + what.remedy;
}

}  // namespace ohio
