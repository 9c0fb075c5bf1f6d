#include <optional>
#include <string>

#include "client/mpi/served_calls.h"

#include "client/mpi/hand_back_at_once.h"

namespace ohio::shim {

CommState* BeginCall(MPI_Comm comm, const char* function, uint64_t first_bytes, const StateFor& state_for,
                     const HandBackTo& hand_back, int* rc) {
  Initialise();
  CommState* st = state_for(first_bytes);
  if (CountCall(st, comm, function, rc)) return nullptr;
  if (st->group == nullptr) {
    if (st->join_deferred) return st;  // the table decides; the group is joined at a call it serves
    // The calls after this one are handed back at once (client/mpi/hand_back_at_once.h), and
    // counted without the lock this takes.
    const int f = IndexOf(function);
    if (st->no_group_reason[f] == nullptr) RememberNoGroupReason(st, f);
    *rc = hand_back(st->why);
    return nullptr;
  }
  // Looking at the group races with a test of one of its nonblocking calls from another thread
  // (which records a failure it finds): held while any is outstanding. None outstanding, a call
  // the selection table then hands back takes nothing.
  std::optional<GroupInUse> in_use;
  if (st->nonblocking_outstanding.load(std::memory_order_relaxed) > 0) in_use.emplace(st);
  if (std::string why; ClosedBefore(st, &why)) {
    if (!in_use) in_use.emplace(st);
    *rc = AfterFailure(st, comm, function, why, /*replayable=*/true, hand_back);
    return nullptr;
  }
  return st;
}

}  // namespace ohio::shim
