#include "daemon/ops/selection_policy.h"

#include "shm/tables/selection_table_text.h"

namespace ohio {

SelectionPolicy ChooseSelectionPolicy(const DaemonConfig& config) {
  SelectionPolicy p;
  p.table = config.selection_rules;
  p.source = config.selection_table.empty() ? "the built-in table" : "selection-table " + config.selection_table;
  p.digest = SelectionTableDigest(p.table);
  return p;
}

}  // namespace ohio
