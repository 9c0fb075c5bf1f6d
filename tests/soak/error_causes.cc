#include "tests/soak/error_causes.h"

namespace ohio::soak {

const std::vector<ErrorCause>& ExpectedCauses() {
  static const std::vector<ErrorCause> causes = {
      {"rank killed before this rank joined", "group failed",
       {"has failed (", " disconnected from ohiod without leaving the group"},
       "kill a rank: another rank of the group joined after it died"},
      {"rank killed before this node met the group", "group failed",
       {"has failed on node ", " disconnected from ohiod without leaving the group"},
       "kill a rank: its node had failed the group when another node opened it"},
      {"rank killed (told by its daemon)", "group failed", {") disconnected from ohiod without leaving the group"},
       "kill a rank: its daemon saw its connection drop"},
      {"rank killed (told by another node)", "group failed",
       {" on node ", " disconnected from ohiod without leaving the group"},
       "kill a rank: its daemon told the group's other nodes (RANK_GONE)"},
      {"peer daemon lost", "group failed", {"lost the connection to node "},
       "restart a daemon: the group's other nodes lost their connection to it"},
      {"peer daemon down at connect", "group failed", {"the data connection to node ", " never came up ("},
       "restart a daemon: another node dialled its data port while it was down"},
      {"own daemon lost", "daemon connection lost", {""},
       "restart a daemon: the ranks it served lost their connection"},
      {"daemon down at connect", "no daemon", {"cannot reach ohiod"},
       "restart a daemon: a rank started while it was down"},
      {"group not opened everywhere", "timeout", {"did not all open it within"},
       "restart a daemon or kill a rank: some node of a new group never opened it"},
      {"ranks never joined", "timeout", {"never joined on node"},
       "restart a daemon or kill a rank: some rank of a new group never joined"},
      {"data connection not up in time", "timeout", {"the data connection to node(s) ", " never came up within "},
       "restart a daemon: a new group's node could not connect to it before the timeout"},
      // A rank killed before it joined is nothing its daemon could see die: the ranks that did
      // join wait for it to enter the call until the timeout, which names it.
      {"rank killed before it joined", "timeout", {"did not enter the alltoall within"},
       "kill a rank: it had not joined yet", true},
      // Open issue (docs/SOAK.md): once in about twenty small-scale soaks, one node of a group
      // whose rank was killed was not told (RANK_GONE) while the others were, and its ranks
      // waited for the timeout. Counted apart so that it shows in the figures.
      {"round timed out after a rank kill (open issue)", "timeout",
       {"did not complete within", "was waiting for the ranks of node(s)"},
       "kill a rank: one node missed its RANK_GONE", true},
  };
  return causes;
}

const ErrorCause* CauseOf(const std::string& code_name, const std::string& message) {
  if (message.empty()) return nullptr;
  for (const ErrorCause& c : ExpectedCauses()) {
    if (c.code_name != code_name) continue;
    bool all = true;
    for (const std::string& part : c.message_parts) all &= message.find(part) != std::string::npos;
    if (all) return &c;
  }
  return nullptr;
}

}  // namespace ohio::soak
