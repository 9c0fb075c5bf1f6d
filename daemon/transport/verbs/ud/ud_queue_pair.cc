#include "daemon/transport/verbs/ud/ud_queue_pair.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "daemon/transport/verbs/receive_slot.h"

namespace ohio {

Result<std::unique_ptr<UdQueuePair>> UdQueuePair::Create(const Rail& rail, size_t rail_index, uint32_t recv_slots,
                                                         uint32_t send_slots, uint32_t send_depth) {
  std::unique_ptr<UdQueuePair> q(new UdQueuePair());
  q->rail_ = &rail;
  q->rail_index_ = rail_index;
  q->mtu_bytes_ = 128u << static_cast<uint32_t>(rail.mtu());  // IBV_MTU_256 is 1
  q->recv_slots_ = recv_slots;
  q->send_slots_ = send_slots;
  q->send_free_ = send_depth;
  ibv_qp_init_attr init{};
  init.send_cq = rail.cq();
  init.recv_cq = rail.cq();
  init.qp_type = IBV_QPT_UD;
  init.cap.max_send_wr = send_depth;
  init.cap.max_recv_wr = recv_slots;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  q->qp_ = ibv_create_qp(rail.pd(), &init);
  if (q->qp_ == nullptr) return SystemError("creating a datagram queue pair on " + rail.name(), errno);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = rail.port();
  a.qkey = kQkey;
  if (int e = ibv_modify_qp(q->qp_, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY); e != 0) {
    return SystemError("datagram queue pair to INIT on " + rail.name(), e);
  }
  a = {};
  a.qp_state = IBV_QPS_RTR;
  if (int e = ibv_modify_qp(q->qp_, &a, IBV_QP_STATE); e != 0) {
    return SystemError("datagram queue pair to RTR on " + rail.name(), e);
  }
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0;
  if (int e = ibv_modify_qp(q->qp_, &a, IBV_QP_STATE | IBV_QP_SQ_PSN); e != 0) {
    return SystemError("datagram queue pair to RTS on " + rail.name(), e);
  }
  const size_t ring = size_t{recv_slots} * q->recv_slot_bytes();
  q->recv_base_ = static_cast<uint8_t*>(rail.AllocateNear(ring));
  if (q->recv_base_ == nullptr) return SystemError("allocating a datagram receive ring", errno);
  q->recv_mr_ = ibv_reg_mr(rail.pd(), q->recv_base_, ring, IBV_ACCESS_LOCAL_WRITE);
  if (q->recv_mr_ == nullptr) return SystemError("registering a datagram receive ring on " + rail.name(), errno);
  const size_t sends = size_t{send_slots} * q->mtu_bytes_;
  q->send_base_ = static_cast<uint8_t*>(rail.AllocateNear(sends));
  if (q->send_base_ == nullptr) return SystemError("allocating datagram send slots", errno);
  q->send_mr_ = ibv_reg_mr(rail.pd(), q->send_base_, sends, IBV_ACCESS_LOCAL_WRITE);
  if (q->send_mr_ == nullptr) return SystemError("registering datagram send slots on " + rail.name(), errno);
  q->refs_.assign(send_slots, 0);
  for (uint32_t s = send_slots; s > 0; --s) q->free_.push_back(s - 1);
  for (uint32_t s = 0; s < recv_slots; ++s) q->RepostReceive(s);
  q->local_.gid = rail.gid();
  q->local_.lid = rail.lid();
  q->local_.qpn = q->qp_->qp_num;
  q->local_.mtu = rail.mtu();
  q->local_.rail = rail.name();
  return q;
}

UdQueuePair::~UdQueuePair() {
  if (qp_ != nullptr) ibv_destroy_qp(qp_);  // first: then the HCA no longer touches the buffers
  if (recv_mr_ != nullptr) ibv_dereg_mr(recv_mr_);
  if (send_mr_ != nullptr) ibv_dereg_mr(send_mr_);
  if (recv_base_ != nullptr) munmap(recv_base_, size_t{recv_slots_} * recv_slot_bytes());
  if (send_base_ != nullptr) munmap(send_base_, size_t{send_slots_} * mtu_bytes_);
}

Result<ibv_ah*> UdQueuePair::AddressOf(const QpEndpoint& remote) const {
  ibv_ah_attr a{};
  a.dlid = remote.lid;
  a.port_num = rail_->port();
  // RoCE always routes by GID; InfiniBand within a subnet needs only the LID, but a GRH costs
  // nothing and carries the sender's GID, which the receiver checks the sender by.
  a.is_global = 1;
  std::memcpy(a.grh.dgid.raw, remote.gid.data(), 16);
  a.grh.sgid_index = static_cast<uint8_t>(rail_->gid_index());
  a.grh.hop_limit = 64;
  ibv_ah* ah = ibv_create_ah(rail_->pd(), &a);
  if (ah == nullptr) {
    return SystemError("an address handle on " + rail_->name() + " for GID " + GidText(remote.gid), errno);
  }
  return ah;
}

void UdQueuePair::RepostReceive(uint32_t slot) {
  if (int e = PostReceiveSlot(qp_, recv_base_ + size_t{slot} * recv_slot_bytes(), recv_slot_bytes(), recv_mr_->lkey,
                              kUdBit | kReceiveBit | uint64_t{rail_index_} << 32 | slot, kGrhBytes);
      e != 0) {
    spdlog::warn("verbs: cannot post a datagram receive on {}: {}", local_.rail, std::strerror(e));
  }
}

std::optional<uint32_t> UdQueuePair::TakeSlot() {
  if (free_.empty()) return std::nullopt;
  const uint32_t s = free_.back();
  free_.pop_back();
  refs_[s] = 1;
  return s;
}

void UdQueuePair::Release(uint32_t s) {
  if (s >= refs_.size() || refs_[s] == 0) return;
  if (--refs_[s] == 0) free_.push_back(s);
}

bool UdQueuePair::Stage(uint32_t s, uint32_t bytes, ibv_ah* ah, uint32_t qpn) {
  if (send_free_ == 0) return false;
  staged_.push_back({s, bytes, ah, qpn});
  --send_free_;
  ++refs_[s];
  return true;
}

size_t UdQueuePair::PostStaged() {
  if (staged_.empty()) return 0;
  const size_t n = staged_.size();
  staged_sges_.resize(n);
  staged_wrs_.assign(n, ibv_send_wr{});
  for (size_t i = 0; i < n; ++i) {
    const Staged& d = staged_[i];
    staged_sges_[i] = {reinterpret_cast<uintptr_t>(slot(d.slot)), d.bytes, send_mr_->lkey};
    ibv_send_wr& wr = staged_wrs_[i];
    wr.wr_id = kUdBit | uint64_t{rail_index_} << 32 | d.slot;
    wr.sg_list = &staged_sges_[i];
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = d.ah;
    wr.wr.ud.remote_qpn = d.qpn;
    wr.wr.ud.remote_qkey = kQkey;
    wr.next = i + 1 < n ? &staged_wrs_[i + 1] : nullptr;
  }
  ibv_send_wr* bad = nullptr;
  size_t refused = 0;
  if (int e = ibv_post_send(qp_, staged_wrs_.data(), &bad); e != 0) {
    spdlog::warn("verbs: cannot post datagrams on {}: {}", local_.rail, std::strerror(e));
    for (size_t i = bad != nullptr ? static_cast<size_t>(bad - staged_wrs_.data()) : 0; i < n; ++i) {
      ++send_free_;
      Release(staged_[i].slot);
      ++refused;
    }
  }
  staged_.clear();
  return refused;
}

void UdQueuePair::SendCompleted(uint32_t s) {
  ++send_free_;
  Release(s);
}

}  // namespace ohio
