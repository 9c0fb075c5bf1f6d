// Posting one slot of a receive ring: the RC connections' rings of small messages and the UD
// queue pairs' rings of datagrams both hand the HCA a fixed-size slot at a time, named in the
// work request's id so that its completion says which slot to read and post again.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

namespace ohio {

// Posts the `bytes` at `slot` (registered under `lkey`) as one receive on `qp`, its completion
// to carry `wr_id`, after zeroing the slot's first `cleared` bytes: a UD slot's global route
// header area, which a datagram that comes without one leaves as it was, so that nothing a
// former datagram left there can be read as this one's. 0, or the error ibv_post_recv returned
// (the caller says where it was).
int PostReceiveSlot(ibv_qp* qp, uint8_t* slot, uint32_t bytes, uint32_t lkey, uint64_t wr_id, uint32_t cleared = 0);

}  // namespace ohio
