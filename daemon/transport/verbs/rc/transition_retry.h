// Moving a queue pair to RTR makes the kernel resolve the peer's MAC address (RoCE: from its GID,
// through the IP neighbour table), and it waits one second for that before it gives up with
// ETIMEDOUT. A peer whose address is not resolved yet (the first connection after a boot, a
// neighbour entry that expired, an ARP or ND answer lost, an IPv6 address still in duplicate
// address detection) fails RTR although a second try a moment later passes. This plans such
// retries: which errors are worth another attempt, the pauses between attempts (growing), and
// when to stop (a deadline). Pure: it is told the times and sleeps nowhere, so that the policy
// is tested without a device (tests/unit/transport/transition_retry_test.cc).
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace ohio {

// The longest the queue pairs of one dial, every rail together, may take trying RTR again
// (ohiod's rtr-retry-budget-ms, whose default it is): half the 10 s a dialling daemon waits for
// the answer (daemon/peers/queue_pair_dialer.cc), so that the accepting node still answers in
// time and the dialling one has as long again for its own.
constexpr std::chrono::milliseconds kLongestRtrRetryBudget{5000};

struct TransitionRetryPolicy {
  // The pause after the first failed attempt, doubled after each further one up to the longest.
  std::chrono::milliseconds first_pause{100};
  std::chrono::milliseconds longest_pause{1000};
};

// Whether a failed ibv_modify_qp may pass if tried again: the kernel's address resolution timed
// out (ETIMEDOUT; it returns ENODATA inside, which does not reach user space, but is listed in
// case a provider passes it on), or the device or kernel was busy (EAGAIN, EBUSY, EINTR).
// Anything else (an attribute the device refuses, no route to the peer's network, no memory)
// does not change by waiting.
bool IsTransientTransitionError(int err);

// The attempts of one transition (or of several in a row sharing one deadline), planned from the
// times it is told.
class TransitionRetryPlan {
 public:
  using Clock = std::chrono::steady_clock;

  TransitionRetryPlan(TransitionRetryPolicy policy, Clock::time_point deadline);

  // The attempt that began at `began` failed at `ended` with errno `err`: the pause before the
  // next attempt, or nothing if there is to be none: the error is not transient, or the next
  // attempt, taking as long as this one did, would end after the deadline (an attempt that
  // times out in the kernel takes its full second every time).
  std::optional<Clock::duration> AfterFailure(int err, Clock::time_point began, Clock::time_point ended);

  int failures() const { return failures_; }

 private:
  TransitionRetryPolicy policy_;
  Clock::time_point deadline_;
  int failures_ = 0;
};

// How a transition ended, for errors and logs: "Connection timed out (4 attempts in 4.7 s)", or
// only the error when it was tried once.
std::string DescribeAttempts(int err, int attempts, std::chrono::milliseconds took);

}  // namespace ohio
