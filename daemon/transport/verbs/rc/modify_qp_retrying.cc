#include "daemon/transport/verbs/rc/modify_qp_retrying.h"

#include <thread>

namespace ohio {

ModifyQpOutcome ModifyQpRetrying(ibv_qp* qp, const ibv_qp_attr& attr, int mask, const TransitionRetryPolicy& policy,
                                 std::chrono::steady_clock::time_point deadline, const OnModifyQpRetry& on_retry) {
  using Clock = std::chrono::steady_clock;
  TransitionRetryPlan plan(policy, deadline);
  ModifyQpOutcome out;
  const Clock::time_point start = Clock::now();
  for (;;) {
    // A copy per attempt: a failed call may have touched what it was given.
    ibv_qp_attr a = attr;
    const Clock::time_point began = Clock::now();
    out.error = ibv_modify_qp(qp, &a, mask);
    ++out.attempts;
    const Clock::time_point ended = Clock::now();
    out.took = std::chrono::duration_cast<std::chrono::milliseconds>(ended - start);
    if (out.error == 0) return out;
    const auto pause = plan.AfterFailure(out.error, began, ended);
    if (!pause) return out;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*pause);
    if (on_retry) on_retry(out.attempts, out.error, ms);
    std::this_thread::sleep_for(*pause);
  }
}

}  // namespace ohio
