#include "daemon/ops/selection_policy.h"

#include "shm/tables/selection_table_text.h"
#include "shm/tables/table_words.h"

namespace ohio {

SelectionPolicy ChooseSelectionPolicy(const DaemonConfig& config) {
  SelectionPolicy p;
  p.table = config.selection_rules;
  p.source = config.selection_table.empty() ? "the built-in table" : "selection-table " + config.selection_table;
  p.text = FormatSelectionTable(p.table);
  p.digest = TableDigest(p.text);
  return p;
}

}  // namespace ohio
