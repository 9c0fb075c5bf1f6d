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
      // A stopped daemon does not answer: libohio's waits on it give up at the timeout and say
      // that it is stopped (client/libohio/round_waiter.cc, client/libohio/control_connection.cc).
      {"own daemon stopped", "timeout", {" within ", "; ohiod (pid ", ") is stopped"},
       "stop a daemon: a rank's wait on it outlasted the timeout", false, true},
      // A group on one node goes on without its daemon (the ranks' blocking calls are their
      // own), so a rank killed while that daemon is down (restarted) has no one to see it die:
      // the node's other ranks wait for it until the timeout ("the other ranks did not enter
      // the alltoall" / "finish reading this rank's send buffer within N ms").
      {"rank killed while its node's daemon was down", "timeout", {"the other ranks did not ", " within "},
       "kill a rank of a group on one node while restarting its daemon", true},
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
      // A rank's hello sits unread in the stopped daemon's socket; once continued, the daemon's
      // housekeeping finds the connection older than hello-timeout-ms before it reads the hello.
      {"hello unread while stopped", "refused", {"no Hello within hello-timeout-ms = "},
       "stop a daemon: a rank connected while it was stopped for longer than hello-timeout-ms", false, true},
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
