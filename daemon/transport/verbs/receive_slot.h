// Posting one slot of a receive ring: the RC connections' rings of small messages and the UD
// queue pairs' rings of datagrams both hand the HCA a fixed-size slot at a time, named in the
// work request's id so that its completion says which slot to read and post again.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

namespace ohio {

// Posts the `bytes` at `slot` (registered under `lkey`) as one receive on `qp`, its completion
// to carry `wr_id`. 0, or the error ibv_post_recv returned (the caller says where it was).
int PostReceiveSlot(ibv_qp* qp, uint8_t* slot, uint32_t bytes, uint32_t lkey, uint64_t wr_id);

}  // namespace ohio
