// How the verbs transport makes and connects its RC queue pairs, and which peer and rail a
// receive completion is for: queue pairs made in INIT with their receive rings, numbered so
// that their receives find them; moved to RTR and RTS against the peer's endpoints, RTR tried
// again while the peer's address is not resolved (transition_retry.h), within one budget for
// all of a dial's rails; and why a rail that does not reach the peer failed, by name.
//
// Locks: Make and ConnectRails touch only atomics (the serials, the budget, the retry count) and
// the queue pairs handed to them, so that the transport calls them without its lock (RTR may
// wait seconds, and every put takes that lock). The table of receivers is guarded by the
// transport's lock (VerbsTransport::mu_): Listen, Forget and ReceiverOf are called under it.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "daemon/transport/transport.h"
#include "daemon/transport/verbs/qp_endpoint.h"
#include "daemon/transport/verbs/rc/rc_peer.h"
#include "daemon/transport/verbs/rc/transition_retry.h"
#include "daemon/transport/verbs/rc/verbs_connection.h"
#include "daemon/transport/verbs/verbs_rail.h"

namespace ohio {

class RcConnector {
 public:
  using Connections = std::vector<std::unique_ptr<VerbsConnection>>;
  // The longest the queue pairs of one dial may take trying RTR again, and the default budget.
  static constexpr std::chrono::milliseconds kRtrRetryBudget = kLongestRtrRetryBudget;

  explicit RcConnector(std::vector<Rail*> rails) : rails_(std::move(rails)) {}

  // A new queue pair and receive ring on `rail`, numbered so that its receives find it.
  Result<std::unique_ptr<VerbsConnection>> Make(size_t rail);
  // Moves `conns` to RTR and RTS against the peer's endpoints of the same rails, RTR retried
  // within the budget for all of them. The error names the rail and both ends.
  Status ConnectRails(const Connections& conns, const std::vector<QpEndpoint>& remote, const std::string& peer);
  // The budget of one dial's RTR retries, every rail together: 0 for one attempt only; at most
  // kRtrRetryBudget (longer is taken as that).
  void set_rtr_retry_budget(std::chrono::milliseconds budget);
  size_t rails() const { return rails_.size(); }
  // RTR attempts tried again, since start.
  uint64_t rtr_retries() const { return rtr_retries_.load(std::memory_order_relaxed); }

  // Why a send on `rail` to a peer failed, naming both ends of the rail when the peer answers
  // on another rail (so it is alive and this rail is what does not reach).
  std::string SendFailure(const RcPeer& rc, const std::string& peer_name, size_t rail, ibv_wc_status status) const;

  // The receives of `conns` (one per rail, in order) are the peer's from now on; or no one's.
  void Listen(PeerId peer, const Connections& conns);
  void Forget(const Connections& conns);
  // The peer and rail of a receive on the connection numbered `serial`; none for a connection
  // dropped since.
  std::optional<std::pair<PeerId, size_t>> ReceiverOf(uint32_t serial) const;
  void ForgetAll() { receivers_.clear(); }

 private:
  std::vector<Rail*> rails_;
  std::atomic<uint32_t> next_serial_{1};
  std::atomic<int64_t> rtr_retry_budget_ms_{kRtrRetryBudget.count()};
  std::atomic<uint64_t> rtr_retries_{0};
  std::map<uint32_t, std::pair<PeerId, size_t>> receivers_;  // connection serial -> peer, rail
};

}  // namespace ohio
