// One peer's seat in the bounded pool of RC queue pairs: whether it holds a place, which service
// carries its data, and what was sent to it since the pool was last planned (rc_pool_plan.h
// weighs it). Guarded by the transport's lock, as the rest of the peer's state.
#pragma once

#include <cstdint>

namespace ohio {

struct PoolSeat {
  // It counts against the RC pool: connected over RC, or a dial, accept or move for RC under way.
  bool rc_held = false;
  // The service puts and messages go on: UD (the peer's datagram link) or RC (its queue pairs).
  // While the pair moves between them both may exist, the old one carrying its last notice and
  // the new one being set up.
  bool ud_service = false;
  // Sent since the pool was last planned.
  uint64_t traffic_bytes = 0;
  uint64_t traffic_puts = 0;

  void CountPut(uint64_t bytes) {
    traffic_bytes += bytes;
    ++traffic_puts;
  }
  void ForgetTraffic() {
    traffic_bytes = 0;
    traffic_puts = 0;
  }
};

}  // namespace ohio
