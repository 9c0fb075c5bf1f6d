#include "shm/segment_change.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "shm/segment_layout.h"

namespace ohio {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

WaitPolicy Policy(microseconds spin) {
  WaitPolicy p;
  p.spin = spin;
  p.slice = milliseconds(1);
  p.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  return p;
}

// The race CI caught in MPI_Alltoall_init: a rank checks its call (not done), the others see
// it done, leave, and the group closes; the rank then checks the group. The call finished
// before the group closed, so the wait must say ready, not stopped.
TEST(WaitForChange, ConditionThatCameTrueBeforeTheStopIsReady) {
  for (const microseconds spin : {microseconds(0), microseconds(2000)}) {
    auto header = std::make_unique<SegmentHeader>();
    bool done = false;
    int stops = 0;
    const WaitOutcome outcome = WaitForChange(
        header.get(), Policy(spin), [&] { return done; },
        [&] {
          ++stops;
          done = true;  // completed, then the group closed: both between two checks of ready()
          return true;
        },
        [] { return false; });
    EXPECT_EQ(outcome, WaitOutcome::kReady) << "spin " << spin.count() << " us";
    EXPECT_EQ(stops, 1);
  }
}

TEST(WaitForChange, ConditionThatCameTrueBeforeTheDaemonWasFoundGoneIsReady) {
  auto header = std::make_unique<SegmentHeader>();
  bool done = false;
  int after_sleeps = 0;
  const WaitOutcome outcome = WaitForChange(
      header.get(), Policy(microseconds(0)), [&] { return done; }, [] { return false; },
      [&] {
        ++after_sleeps;
        done = true;
        return true;
      });
  EXPECT_EQ(outcome, WaitOutcome::kReady);
  EXPECT_EQ(after_sleeps, 1);
}

TEST(WaitForChange, StopWithoutTheConditionIsStopped) {
  for (const microseconds spin : {microseconds(0), microseconds(2000)}) {
    auto header = std::make_unique<SegmentHeader>();
    EXPECT_EQ(WaitForChange(
                  header.get(), Policy(spin), [] { return false; }, [] { return true; }, [] { return false; }),
              WaitOutcome::kStopped);
  }
  auto header = std::make_unique<SegmentHeader>();
  EXPECT_EQ(WaitForChange(
                header.get(), Policy(microseconds(0)), [] { return false; }, [] { return false; }, [] { return true; }),
            WaitOutcome::kStopped);
}

TEST(WaitForChange, NothingChangingTimesOut) {
  auto header = std::make_unique<SegmentHeader>();
  WaitPolicy p = Policy(microseconds(100));
  p.deadline = std::chrono::steady_clock::now() + milliseconds(20);
  EXPECT_EQ(WaitForChange(
                header.get(), p, [] { return false; }, [] { return false; }, [] { return false; }),
            WaitOutcome::kTimedOut);
}

}  // namespace
}  // namespace ohio
