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
  CountInDaemon(st, kept.ohio_function, ohio::HandBackReason::kSelectionTable, n);
}

void CountInDaemon(CommState* st, int function, ohio::HandBackReason reason, uint64_t calls) {
  if (function < 0) return;
  if (st->group != nullptr) {
    ohio_count_handed_back_calls(st->group, function, static_cast<int>(reason), calls);
    return;
  }
  if (st->join_deferred && st->counts_for_node) {
    ohio_client_count_handed_back_calls(st->client, function, static_cast<int>(reason), calls);
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
    if (st->no_group_reason[f] == nullptr) RememberNoGroupReason(st, f);
    st->no_group_reason[f]->fetch_add(static_cast<long>(n), std::memory_order_relaxed);
  }
}

void RememberNoGroupReason(CommState* st, int function) {
  Process::Tally& tally = TallyOf(kFunctions[function]);
  const std::lock_guard<std::mutex> lock(P().mu);  // another thread may add a reason
  st->no_group_reason[function] = &tally.reasons[st->why];
}

}  // namespace ohio::shim
