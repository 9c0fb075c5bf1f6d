#include "client/mpi/deferred_join.h"

#include <cstring>
#include <vector>

#include "client/mpi/hand_back_at_once.h"
#include "shm/plan/buffer_sizing.h"

namespace ohio::shim {

void JoinNow(CommState* st, MPI_Comm comm, ohio_client* client, uint64_t hint_bytes) {
  const CommState::PendingJoin& join = st->pending;
  std::vector<const char*> node_names;
  for (const std::string& n : join.nodes) node_names.push_back(n.c_str());
  ohio_group_spec spec = {};
  std::memcpy(spec.key, join.key, OHIO_KEY_BYTES);
  spec.size = join.size;
  spec.rank = join.rank;
  spec.num_nodes = static_cast<uint32_t>(node_names.size());
  spec.node_names = node_names.data();
  spec.rank_node = join.rank_node.data();
  spec.bytes_per_rank_hint = ohio::HintClassFor(hint_bytes);
  // One request and its answer on the shared connection (its own lock): ohiod answers a join at
  // once, without waiting for the group's other ranks.
  ohio_group* group = nullptr;
  const int rc = client != nullptr ? ohio_join(client, &spec, &group) : OHIO_ERR_NO_DAEMON;
  std::string why_not;
  if (rc != OHIO_OK) {
    why_not = client != nullptr ? std::string("ohiod refused the group (") + ohio_last_error() + ")"
                                : "no ohiod reachable to join the group";
  } else {
    st->group = group;
    const char* text = nullptr;
    const char* transport = nullptr;
    if (ohio_group_selection(group, &text, &transport) != OHIO_OK) {
      why_not = std::string("the ohio group could not give its selection table (") + ohio_last_error() + ")";
    } else {
      why_not = AdoptSelection(st, text, transport);
    }
  }
  st->join_deferred = false;
  // One collective for the outcome: whether every rank joined and has the group's table.
  unsigned long long mine[2] = {rc == OHIO_OK ? 0ull : 1ull, why_not.empty() ? 0ull : 1ull};
  unsigned long long agreed[2] = {};
  PMPI_Allreduce(mine, agreed, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
  if (agreed[0] == 0 && agreed[1] == 0) return;
  if (why_not.empty()) {
    why_not = agreed[0] != 0 ? "ohiod refused another rank of the communicator"
                             : "another rank of the communicator could not read the group's selection table";
  }
  Close(st, why_not);  // leaves the group this rank joined, if it did
}

bool JoinedForThisCall(CommState* st, MPI_Comm comm, uint64_t hint_bytes) {
  if (!st->join_deferred) return true;
  // What the table handed back so far is counted as the communicator's without a group, and
  // its verdicts are taken again from the group's table, which a SIGHUP may have changed since
  // the set-up (every rank joins the same group, so all of them hold the same).
  FlushHandBacks(st);
  JoinNow(st, comm, ClientToJoinThrough(), hint_bytes);
  for (CommState::KeptVerdict& kept : st->kept_verdicts) kept = CommState::KeptVerdict{};
  return st->group != nullptr;
}

}  // namespace ohio::shim
