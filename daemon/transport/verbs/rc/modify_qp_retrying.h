// ibv_modify_qp tried again on transient failures until a deadline, as TransitionRetryPlan says:
// the one loop that sleeps between attempts, shared by the verbs transport's queue pairs
// (QueuePair::ConnectTo) and the Soft-RoCE smoke test's (tests/vm), whose first connection
// after the guest's boot met an unresolved neighbour.
#pragma once

#include <infiniband/verbs.h>

#include <chrono>
#include <functional>

#include "daemon/transport/verbs/rc/transition_retry.h"

namespace ohio {

struct ModifyQpOutcome {
  int error = 0;     // 0, or the errno of the last attempt
  int attempts = 0;  // 1 when the first passed
  std::chrono::milliseconds took{0};
};

// Told of each failed attempt that is to be tried again (numbered from 1), before the pause.
using OnModifyQpRetry = std::function<void(int failed_attempt, int err, std::chrono::milliseconds pause)>;

// Moves `qp` with `attr` and `mask`; the first attempt is always made, later ones only within
// `deadline`. Blocks the calling thread for the pauses and for the kernel's own waits.
ModifyQpOutcome ModifyQpRetrying(ibv_qp* qp, const ibv_qp_attr& attr, int mask, const TransitionRetryPolicy& policy,
                                 std::chrono::steady_clock::time_point deadline,
                                 const OnModifyQpRetry& on_retry = {});

}  // namespace ohio
