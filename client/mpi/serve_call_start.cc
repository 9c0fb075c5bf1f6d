#include <string>

#include "client/mpi/served_calls.h"

namespace ohio::shim {

CommState* BeginCall(MPI_Comm comm, const char* function, uint64_t first_bytes, const StateFor& state_for,
                     const FallThroughTo& fall_through, int* rc) {
  Initialise();
  CommState* st = state_for(first_bytes);
  if (CountCall(st, comm, function, rc)) return nullptr;
  if (st->group == nullptr) {
    *rc = fall_through(st->why);
    return nullptr;
  }
  if (std::string why; ClosedBefore(st, &why)) {
    const GroupInUse in_use(st);
    *rc = AfterFailure(st, comm, function, why, /*replayable=*/true, fall_through);
    return nullptr;
  }
  return st;
}

}  // namespace ohio::shim
