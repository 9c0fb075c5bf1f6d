#include "shm/segment_change.h"

#include <sched.h>

#include "shm/futex.h"

namespace ohio {

bool SignalChange(SegmentHeader* header) {
  header->event_count.fetch_add(1, std::memory_order_seq_cst);
  if (header->sleepers.load(std::memory_order_seq_cst) == 0) return false;
  FutexWakeAll(&header->event_count);
  return true;
}

namespace segment_change_internal {

void Yield() { sched_yield(); }

void Sleep(SegmentHeader* header, uint32_t seen, std::chrono::nanoseconds timeout) {
  header->sleepers.fetch_add(1, std::memory_order_seq_cst);
  // A change published after `seen` was read moved event_count on: the futex then returns at
  // once. A change published before it was seen by the caller's ready() check.
  FutexWait(&header->event_count, seen, timeout);
  header->sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace segment_change_internal
}  // namespace ohio
