#include "daemon/transport/verbs/rc/queue_pair.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

namespace ohio {

namespace {

// 4.096 us * 2^16 = 268 ms before a retransmission, 6 of them: a peer that is gone shows as an
// error after about two seconds, while a busy or emulated peer is given time to answer. Not 7:
// Soft-RoCE takes 7 to mean "retry for ever", and a dead peer would never be noticed.
constexpr uint8_t kAckTimeout = 16;
constexpr uint8_t kRetryCount = 6;
// 7 = retry for ever on "receiver not ready": the peer reposts receives as it polls; a peer
// that died is still caught by the transport retries above.
constexpr uint8_t kRnrRetry = 7;
constexpr uint8_t kMinRnrTimer = 12;  // 0.64 ms

uint32_t RandomPsn() {
  static thread_local std::mt19937 gen(std::random_device{}());
  return gen() & 0xffffff;
}

}  // namespace

Result<std::unique_ptr<QueuePair>> QueuePair::Create(const Rail& rail, uint32_t send_depth, uint32_t recv_depth,
                                                     uint32_t max_sge) {
  std::unique_ptr<QueuePair> q(new QueuePair());
  q->rail_ = &rail;
  q->max_sge_ = std::min(max_sge, rail.max_sge());
  ibv_qp_init_attr init{};
  init.send_cq = rail.cq();
  init.recv_cq = rail.cq();
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = send_depth;
  init.cap.max_recv_wr = recv_depth;
  init.cap.max_send_sge = q->max_sge_;
  init.cap.max_recv_sge = 1;
  q->qp_ = ibv_create_qp(rail.pd(), &init);
  if (q->qp_ == nullptr) return SystemError("creating a queue pair on " + rail.name(), errno);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = rail.port();
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  if (int e = ibv_modify_qp(q->qp_, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS); e != 0) {
    return SystemError("queue pair to INIT on " + rail.name(), e);
  }
  q->local_.gid = rail.gid();
  q->local_.lid = rail.lid();
  q->local_.qpn = q->qp_->qp_num;
  q->local_.psn = RandomPsn();
  q->local_.mtu = rail.mtu();
  q->local_.rail = rail.name();
  return q;
}

QueuePair::~QueuePair() {
  if (qp_ != nullptr) ibv_destroy_qp(qp_);
}

Status QueuePair::ConnectTo(const QpEndpoint& remote, std::chrono::steady_clock::time_point deadline,
                            const OnModifyQpRetry& on_retry) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = static_cast<ibv_mtu>(std::min<uint32_t>(local_.mtu, remote.mtu));
  a.dest_qp_num = remote.qpn;
  a.rq_psn = remote.psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = kMinRnrTimer;
  a.ah_attr.port_num = rail_->port();
  a.ah_attr.dlid = remote.lid;
  a.ah_attr.sl = 0;
  // RoCE always routes by GID; InfiniBand within a subnet by LID (GID-routed if the peer has no LID).
  if (rail_->ethernet() || remote.lid == 0) {
    a.ah_attr.is_global = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, remote.gid.data(), 16);
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(rail_->gid_index());
    a.ah_attr.grh.hop_limit = 64;
  }
  // RoCE: the kernel resolves the peer's MAC here and gives up after a second if the neighbour
  // table does not have it yet; a failed RTR leaves the queue pair in INIT, so it is tried again.
  const ModifyQpOutcome rtr = ModifyQpRetrying(qp_, a,
                                               IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                                   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                                               TransitionRetryPolicy{}, deadline, on_retry);
  if (rtr.error != 0) {
    return Status(Code::kSystem, "queue pair to RTR on " + rail_->name() + " (peer QP " +
                                     std::to_string(remote.qpn) + "): " +
                                     DescribeAttempts(rtr.error, rtr.attempts, rtr.took));
  }
  ibv_qp_attr s{};
  s.qp_state = IBV_QPS_RTS;
  s.timeout = kAckTimeout;
  s.retry_cnt = kRetryCount;
  s.rnr_retry = kRnrRetry;
  s.sq_psn = local_.psn;
  s.max_rd_atomic = 1;
  const int e = ibv_modify_qp(qp_, &s,
                              IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                  IBV_QP_MAX_QP_RD_ATOMIC);
  if (e != 0) return SystemError("queue pair to RTS on " + rail_->name(), e);
  remote_ = remote;
  return Status::Ok();
}

}  // namespace ohio
