#include "daemon/transport/verbs/rc/transition_retry.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ohio {

bool IsTransientTransitionError(int err) {
  switch (err) {
    case ETIMEDOUT:
    case ENODATA:
    case EAGAIN:
    case EBUSY:
    case EINTR:
      return true;
    default:
      return false;
  }
}

TransitionRetryPlan::TransitionRetryPlan(TransitionRetryPolicy policy, Clock::time_point deadline)
    : policy_(policy), deadline_(deadline) {}

std::optional<TransitionRetryPlan::Clock::duration> TransitionRetryPlan::AfterFailure(int err, Clock::time_point began,
                                                                                      Clock::time_point ended) {
  ++failures_;
  if (!IsTransientTransitionError(err)) return std::nullopt;
  Clock::duration pause = policy_.first_pause;
  for (int i = 1; i < failures_ && pause < policy_.longest_pause; ++i) pause *= 2;
  pause = std::min<Clock::duration>(pause, policy_.longest_pause);
  const Clock::duration last = std::max<Clock::duration>(ended - began, Clock::duration::zero());
  if (ended + pause + last > deadline_) return std::nullopt;
  return pause;
}

std::string DescribeAttempts(int err, int attempts, std::chrono::milliseconds took) {
  std::string out = std::strerror(err);
  if (attempts <= 1) return out;
  char span[32];
  std::snprintf(span, sizeof(span), "%.1f s", static_cast<double>(took.count()) / 1000.0);
  return out + " (" + std::to_string(attempts) + " attempts in " + span + ")";
}

}  // namespace ohio
