// The work requests posted and not completed yet, and what each one's completion must do. Kept
// in slots that are reused, so that posting allocates nothing; a work request's id is a
// sequence number above its slot's index, so that the completion of a request whose slot was
// released since (its peer went down) is recognised as stale and ignored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "daemon/transport/transport.h"

namespace ohio {

struct InFlight {
  uint64_t wr_id = 0;  // 0: the slot is free
  PeerId peer = 0;
  uint64_t generation = 0;  // of the peer's connections it was posted on
  size_t rail = 0;
  int slot = -1;          // bounce slot to return
  bool put_last = false;  // completes a put: report kPutDone
  bool stripe = false;    // one stripe of the striped put first in its peer's line
  uint64_t cookie = 0;
  uint64_t bytes = 0;
};

class InFlightTable {
 public:
  // Records a work request about to be posted; the id returned names it in the completion.
  uint64_t Track(InFlight f);
  // The request a completion names, released; nullopt when it was released before.
  std::optional<InFlight> Complete(uint64_t wr_id);
  // Releases every request to `peer` (gone), each shown to `released` first.
  void ReleasePeer(PeerId peer, const std::function<void(const InFlight&)>& released);
  // Whether any request to `peer` is still posted (a move between services waits for none).
  bool AnyFor(PeerId peer) const;

 private:
  void Release(uint32_t index);

  std::vector<InFlight> slots_;
  std::vector<uint32_t> free_;
  uint64_t next_wr_ = 1;
};

}  // namespace ohio
