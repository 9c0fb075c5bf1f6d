#include "daemon/transport/verbs/receive_slot.h"

#include <cstring>

namespace ohio {

int PostReceiveSlot(ibv_qp* qp, uint8_t* slot, uint32_t bytes, uint32_t lkey, uint64_t wr_id, uint32_t cleared) {
  std::memset(slot, 0, cleared < bytes ? cleared : bytes);
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(slot);
  sge.length = bytes;
  sge.lkey = lkey;
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(qp, &wr, &bad);
}

}  // namespace ohio
