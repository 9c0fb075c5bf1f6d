// client/mpi/opt_out_run.h: after 16 calls in a row that a rank opted out of, 1,008 go to the
// library without asking; then one asks, and another opt-out starts the next 1,008 at once; a
// served call in between ends the run.
#include "client/mpi/opt_out_run.h"

#include <gtest/gtest.h>

namespace ohio::shim {
namespace {

// Runs `calls` calls that ask and are opted out of; how many of them asked.
int OptedOut(OptOutRun& run, int calls) {
  int asked = 0;
  for (int i = 0; i < calls; ++i) {
    if (GoesToLibraryByRun(run)) continue;
    ++asked;
    NoteOptedOut(run);
  }
  return asked;
}

TEST(OptOutRun, SixteenOptOutsSendTheNextCallsToTheLibraryThenOneAsksAgain) {
  OptOutRun run;
  EXPECT_EQ(OptedOut(run, 16), 16);
  for (uint32_t i = 0; i < kLibraryCalls; ++i) ASSERT_TRUE(GoesToLibraryByRun(run)) << i;
  EXPECT_FALSE(GoesToLibraryByRun(run));  // asks
  NoteOptedOut(run);
  EXPECT_TRUE(GoesToLibraryByRun(run));   // and the next run starts at once
  // Over a long program: one call in 1,009 asks.
  OptOutRun steady;
  EXPECT_EQ(OptedOut(steady, 16 + 10 * 1009), 16 + 10);
}

TEST(OptOutRun, ACallThatIsServedEndsTheRun) {
  OptOutRun run;
  EXPECT_EQ(OptedOut(run, 15), 15);
  EXPECT_FALSE(GoesToLibraryByRun(run));  // asks, and is served: no NoteOptedOut
  EXPECT_EQ(OptedOut(run, 15), 15);       // 15 in a row again, not yet 16
  EXPECT_FALSE(GoesToLibraryByRun(run));
  NoteOptedOut(run);
  EXPECT_TRUE(GoesToLibraryByRun(run));
}

TEST(OptOutRun, AServedCallAfterTheLibrarysCallsNeedsSixteenMoreOptOuts) {
  OptOutRun run;
  OptedOut(run, 16);
  for (uint32_t i = 0; i < kLibraryCalls; ++i) GoesToLibraryByRun(run);
  EXPECT_FALSE(GoesToLibraryByRun(run));  // asks and is served
  EXPECT_EQ(OptedOut(run, 16), 16);
  EXPECT_TRUE(GoesToLibraryByRun(run));
}

}  // namespace
}  // namespace ohio::shim
