#include "client/mpi/hand_back_at_once.h"

#include <mutex>

#include "client/libohio/ohio.h"
#include "shm/handed_back.h"

namespace ohio::shim {

bool GroupStillOpen(CommState* st) { return ohio_group_usable(st->group) != 0; }

void FlushKeptVerdict(CommState* st, CommState::KeptVerdict& kept) {
  const uint64_t n = kept.pending;
  if (n == 0) return;
  kept.pending = 0;
  const long calls = static_cast<long>(n);
  kept.handed_back->fetch_add(calls, std::memory_order_relaxed);
  kept.by_table->fetch_add(calls, std::memory_order_relaxed);
  kept.reason_count->fetch_add(calls, std::memory_order_relaxed);
  if (st->group != nullptr && kept.ohio_function >= 0) {
    ohio_count_handed_back_calls(st->group, kept.ohio_function, static_cast<int>(ohio::HandBackReason::kSelectionTable),
                                 n);
  }
}

void FlushHandBacks(CommState* st) {
  for (CommState::KeptVerdict& kept : st->kept_verdicts) FlushKeptVerdict(st, kept);
  for (int f = 0; f < kFunctionCount; ++f) {
    const uint64_t n = st->handed_back_pending[f];
    if (n == 0) continue;
    st->handed_back_pending[f] = 0;
    Process::Tally& tally = TallyOf(kFunctions[f]);
    tally.handed_back.fetch_add(static_cast<long>(n), std::memory_order_relaxed);
    const std::lock_guard<std::mutex> lock(P().mu);
    tally.reasons[st->why] += static_cast<long>(n);
  }
}

}  // namespace ohio::shim
