// When a queue pair's move to RTR is tried again (daemon/transport/verbs/rc/transition_retry.h): only on
// errors that waiting can cure, with pauses that double up to a cap, and never so that an attempt
// would end after the deadline; planned on made-up times, as the kernel would take them.
#include "daemon/transport/verbs/rc/transition_retry.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

namespace ohio {
namespace {

using std::chrono::milliseconds;
using Clock = TransitionRetryPlan::Clock;

struct Attempts {
  std::vector<long> pauses_ms;  // before each retry
  long last_end_ms = 0;         // when the last attempt ended
  int attempts = 0;
};

// Attempts that each take `attempt` and fail with `err`, paused as the plan says, until it says
// stop; times from 0.
Attempts Simulate(TransitionRetryPolicy policy, milliseconds deadline, milliseconds attempt, int err) {
  const Clock::time_point zero{};
  TransitionRetryPlan plan(policy, zero + deadline);
  Attempts run;
  Clock::time_point now = zero;
  for (;;) {
    const Clock::time_point began = now;
    now += attempt;
    ++run.attempts;
    run.last_end_ms = std::chrono::duration_cast<milliseconds>(now - zero).count();
    const auto pause = plan.AfterFailure(err, began, now);
    if (!pause) break;
    run.pauses_ms.push_back(std::chrono::duration_cast<milliseconds>(*pause).count());
    now += *pause;
    if (run.attempts > 1000) ADD_FAILURE() << "the plan never stops";
    if (run.attempts > 1000) break;
  }
  EXPECT_EQ(plan.failures(), run.attempts);
  return run;
}

TEST(TransitionRetry, TransientErrorsAreTheKernelsWaitsAndBusyDevices) {
  for (int err : {ETIMEDOUT, ENODATA, EAGAIN, EBUSY, EINTR}) EXPECT_TRUE(IsTransientTransitionError(err)) << err;
  // A refused attribute, no route to the peer's network, no memory, no such device: waiting
  // changes nothing.
  for (int err : {0, EINVAL, EPERM, ENOMEM, ENETUNREACH, EHOSTUNREACH, ENODEV, EOPNOTSUPP}) {
    EXPECT_FALSE(IsTransientTransitionError(err)) << err;
  }
}

TEST(TransitionRetry, PermanentErrorIsNotTriedAgain) {
  const Attempts run = Simulate({}, milliseconds(5000), milliseconds(1), EINVAL);
  EXPECT_EQ(run.attempts, 1);
  EXPECT_TRUE(run.pauses_ms.empty());
}

// The case it is for: the kernel waits a second for the neighbour each time. Within the
// default (and longest) budget, 5 s: attempts at 0, 1.1, 2.3 and 3.7 s; a fifth, after 0.8 s
// more, would end at 6.5 s. A budget of 0 makes one attempt (DeadlineAlreadyPassedMeansOneAttempt).
TEST(TransitionRetry, KernelTimeoutsAreTriedAgainWithDoublingPausesWithinTheDeadline) {
  ASSERT_EQ(kLongestRtrRetryBudget, milliseconds(5000));
  const Attempts run =
      Simulate({milliseconds(100), milliseconds(1000)}, kLongestRtrRetryBudget, milliseconds(1000), ETIMEDOUT);
  EXPECT_EQ(run.attempts, 4);
  EXPECT_EQ(run.pauses_ms, (std::vector<long>{100, 200, 400}));
  EXPECT_EQ(run.last_end_ms, 4700);
}

// Failures that come back at once: the pauses grow to the cap and stay there, and the last
// attempt still ends within the deadline.
TEST(TransitionRetry, PausesStopGrowingAtTheLongest) {
  const Attempts run = Simulate({milliseconds(100), milliseconds(1000)}, milliseconds(5000), milliseconds(0), EAGAIN);
  EXPECT_EQ(run.pauses_ms, (std::vector<long>{100, 200, 400, 800, 1000, 1000, 1000}));
  EXPECT_EQ(run.attempts, 8);
  EXPECT_EQ(run.last_end_ms, 4500);
}

TEST(TransitionRetry, NoAttemptEndsAfterTheDeadlineWhateverItTakes) {
  for (long attempt_ms : {0L, 1L, 50L, 300L, 999L, 1000L, 2500L}) {
    for (long deadline_ms : {0L, 500L, 1000L, 5000L, 9000L}) {
      const Attempts run = Simulate({}, milliseconds(deadline_ms), milliseconds(attempt_ms), ETIMEDOUT);
      SCOPED_TRACE("attempts of " + std::to_string(attempt_ms) + " ms, deadline " + std::to_string(deadline_ms));
      // The first attempt is always made; every later one ends by the deadline.
      if (run.attempts > 1) EXPECT_LE(run.last_end_ms, deadline_ms);
      // And the plan does not give up while a retry would still have fitted.
      const long next_pause = run.pauses_ms.empty() ? 100 : std::min(run.pauses_ms.back() * 2, 1000L);
      EXPECT_GT(run.last_end_ms + next_pause + attempt_ms, deadline_ms);
    }
  }
}

TEST(TransitionRetry, DeadlineAlreadyPassedMeansOneAttempt) {
  const Attempts run = Simulate({}, milliseconds(0), milliseconds(1000), ETIMEDOUT);
  EXPECT_EQ(run.attempts, 1);
}

TEST(TransitionRetry, DescribesTheAttemptsOnlyWhenThereWereSeveral) {
  EXPECT_EQ(DescribeAttempts(ETIMEDOUT, 1, milliseconds(1000)), "Connection timed out");
  EXPECT_EQ(DescribeAttempts(ETIMEDOUT, 4, milliseconds(4712)), "Connection timed out (4 attempts in 4.7 s)");
  EXPECT_EQ(DescribeAttempts(EINVAL, 2, milliseconds(50)), "Invalid argument (2 attempts in 0.1 s)");
}

}  // namespace
}  // namespace ohio
