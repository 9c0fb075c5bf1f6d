#include "daemon/transport/verbs/rc/rc_connector.h"

#include <algorithm>
#include <cstring>

#include <spdlog/spdlog.h>

namespace ohio {

Result<std::unique_ptr<VerbsConnection>> RcConnector::Make(size_t rail) {
  return VerbsConnection::Make(*rails_[rail], rail, next_serial_.fetch_add(1));
}

Status RcConnector::ConnectRails(const Connections& conns, const std::vector<QpEndpoint>& remote,
                                 const std::string& peer) {
  // One budget for every rail: the dialler waits for the answer (QueuePairDialer) and must hear
  // it, success or not, within its own deadline.
  const std::chrono::milliseconds budget(rtr_retry_budget_ms_.load(std::memory_order_relaxed));
  const auto deadline = std::chrono::steady_clock::now() + budget;
  for (size_t r = 0; r < conns.size() && r < remote.size(); ++r) {
    QueuePair& qp = *conns[r]->qp;
    Status s = qp.ConnectTo(remote[r], deadline, [&](int attempt, int err, std::chrono::milliseconds pause) {
      rtr_retries_.fetch_add(1, std::memory_order_relaxed);
      spdlog::warn("verbs: queue pair on {} to node {} ({}, GID {}) not ready to receive, attempt {}: {}; "
                   "trying again in {} ms (the peer's address may not be resolved yet)",
                   qp.local().rail, peer, remote[r].rail, GidText(remote[r].gid), attempt, std::strerror(err),
                   pause.count());
    });
    if (!s.ok()) return Status(Code::kSystem, RailUnreachable(r, qp.local(), remote[r], peer, s.message()));
  }
  return Status::Ok();
}

void RcConnector::set_rtr_retry_budget(std::chrono::milliseconds budget) {
  rtr_retry_budget_ms_.store(std::clamp(budget, std::chrono::milliseconds::zero(), kRtrRetryBudget).count(),
                             std::memory_order_relaxed);
}

std::string RcConnector::SendFailure(const RcPeer& rc, const std::string& peer_name, size_t rail,
                                     ibv_wc_status status) const {
  const std::string what = ibv_wc_status_str(status);
  std::string answering;
  for (const auto& c : rc.conns) {
    if (c->reached && c->rail != rail) answering += (answering.empty() ? "" : ", ") + c->qp->local().rail;
  }
  if (answering.empty() || rc.conns.size() <= rail) {
    return "send on " + rails_[rail]->name() + ": " + what + " (peer gone or unreachable)";
  }
  // The peer answers on other rails, so it is alive: this rail is what does not reach.
  const QueuePair& qp = *rc.conns[rail]->qp;
  return RailUnreachable(rail, qp.local(), qp.remote(), peer_name, what + " while " + answering + " reach it");
}

void RcConnector::Listen(PeerId peer, const Connections& conns) {
  for (size_t r = 0; r < conns.size(); ++r) receivers_[conns[r]->serial] = {peer, r};
}

void RcConnector::Forget(const Connections& conns) {
  for (const auto& c : conns) receivers_.erase(c->serial);
}

std::optional<std::pair<PeerId, size_t>> RcConnector::ReceiverOf(uint32_t serial) const {
  auto it = receivers_.find(serial);
  if (it == receivers_.end()) return std::nullopt;
  return it->second;
}

}  // namespace ohio
