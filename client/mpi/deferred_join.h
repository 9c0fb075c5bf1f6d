// Joining a communicator's group. Where every rank's daemon offers the same selection table at
// set-up, the ranks decide each call by it and join at the first call it serves
// (JoinedForThisCall): a communicator whose calls all go to the MPI library (the program's
// small calls on one node, say) never makes ohiod create a segment, wake its threads or count a
// group, and its first call costs one PMPI_Allgather. Otherwise the set-up joins at once
// (JoinNow). Either way every rank of the communicator joins in the same call, and one
// PMPI_Allreduce tells all of them that every one did.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>

#include "client/mpi/mpi_shim_state.h"

namespace ohio::shim {

// The table `text` and `transport`, parsed (once per process for a text), and the communicator's
// shape as the table sees it (st->nodes, st->pending.ppn), into st; or why not.
std::string AdoptSelection(CommState* st, const char* text, const char* transport);

// Every rank of comm, in the same call: joins the group st->pending describes through `client`
// (null: this rank has no daemon to join through), its buffers sized for calls of `hint_bytes`
// per rank (ohio_group_spec), takes the group's table, and agrees with the others that every rank
// did. Where one did not, st is closed for the reason: this call and every later one go to the
// library.
void JoinNow(CommState* st, MPI_Comm comm, ohio_client* client, uint64_t hint_bytes);

// In a call the table serves (every rank of comm reaches it in the same call): the group,
// joined now if the join was deferred. True: st->group serves the call. False: the join failed
// on some rank, and st->why says why every rank hands this call and all later ones back.
bool JoinedForThisCall(CommState* st, MPI_Comm comm, uint64_t hint_bytes);

}  // namespace ohio::shim
