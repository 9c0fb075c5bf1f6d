// One reliable-connected queue pair to one peer node on one rail, and what the two ends tell
// each other to connect it (through the peer gRPC service): GID, LID, QP number, first PSN
// and MTU. Created in INIT; ConnectTo moves it through RTR to RTS, trying RTR again while the
// peer's address is not resolved yet (transition_retry.h).
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "daemon/transport/verbs/qp_endpoint.h"
#include "daemon/transport/verbs/rc/modify_qp_retrying.h"
#include "daemon/transport/verbs/verbs_rail.h"

namespace ohio {

class QueuePair {
 public:
  static Result<std::unique_ptr<QueuePair>> Create(const Rail& rail, uint32_t send_depth, uint32_t recv_depth,
                                                   uint32_t max_sge);
  ~QueuePair();
  QueuePair(const QueuePair&) = delete;
  QueuePair& operator=(const QueuePair&) = delete;

  ibv_qp* qp() const { return qp_; }
  const QpEndpoint& local() const { return local_; }
  // The peer's end, once ConnectTo succeeded.
  const QpEndpoint& remote() const { return remote_; }
  uint32_t max_sge() const { return max_sge_; }
  // INIT -> RTR -> RTS against the peer's end. RTR is tried again on transient failures until
  // `deadline` (the first attempt is always made), each retry told to `on_retry`; RTS resolves
  // nothing and is tried once. Blocks for the kernel's waits and the pauses: not under a lock
  // that others need.
  Status ConnectTo(const QpEndpoint& remote, std::chrono::steady_clock::time_point deadline,
                   const OnModifyQpRetry& on_retry = {});

 private:
  QueuePair() = default;
  const Rail* rail_ = nullptr;
  ibv_qp* qp_ = nullptr;
  QpEndpoint local_;
  QpEndpoint remote_;
  uint32_t max_sge_ = 1;
};

}  // namespace ohio
