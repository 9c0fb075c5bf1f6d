// The rule that decides whether ohiod's engine and ranks spin (common/spin_mode.h), and the CPUs it
// is fed: a cgroup's quota read from its files, and ohiod's `cpus` setting.
#include "common/spin_mode.h"

#include <gtest/gtest.h>

#include <utility>

#include "common/host_cpus.h"

namespace ohio {
namespace {

TEST(SpinMode, OwnCoreOnlyWhenEveryoneFits) {
  // A real node: 56 CPUs, 55 ranks and the engine fit; a 56th rank makes them share.
  EXPECT_EQ(ChooseSpinMode(56, 56), SpinMode::kOwnCore);
  EXPECT_EQ(ChooseSpinMode(56, 57), SpinMode::kYield);
  // One node on this 2-core machine: 1 rank + engine fit, 4 ranks + engine do not.
  EXPECT_EQ(ChooseSpinMode(2, 2), SpinMode::kOwnCore);
  EXPECT_EQ(ChooseSpinMode(2, 5), SpinMode::kYield);
  // A cgroup quota of 1.5 CPUs: a rank and the engine do not both fit.
  EXPECT_EQ(ChooseSpinMode(1.5, 2), SpinMode::kYield);
  EXPECT_EQ(ChooseSpinMode(1.5, 1), SpinMode::kOwnCore);
}

TEST(SpinMode, MoreThanEightPerCpuNeverSpins) {
  // deploy/local-cluster.sh's default, 4 nodes x 2 ranks on 2 cores: 3 per half CPU, yield.
  EXPECT_EQ(ChooseSpinMode(0.5, 3), SpinMode::kYield);
  EXPECT_EQ(ChooseSpinMode(0.5, 4), SpinMode::kYield);
  EXPECT_EQ(ChooseSpinMode(0.5, 5), SpinMode::kSleep);
  // 16 x 1, 16 x 2 and 32 x 1 on 2 cores: 16, 24 and 32 per CPU, sleep.
  EXPECT_EQ(ChooseSpinMode(2.0 / 16, 2), SpinMode::kSleep);
  EXPECT_EQ(ChooseSpinMode(2.0 / 16, 3), SpinMode::kSleep);
  EXPECT_EQ(ChooseSpinMode(2.0 / 32, 2), SpinMode::kSleep);
  // A real node's worth: 448 processes on 56 CPUs still yield, 449 sleep.
  EXPECT_EQ(ChooseSpinMode(56, 448), SpinMode::kYield);
  EXPECT_EQ(ChooseSpinMode(56, 449), SpinMode::kSleep);
}

TEST(RankSpin, TwiceTheTypicalCallWithinItsBounds) {
  // 50 us calls spin 200 us (the floor), 300 us calls 600 us, 2 ms calls the 1000 us ceiling
  // on a node with a core for each of its processes.
  EXPECT_EQ(RankSpinUs(50'000, 200, 1000, false), 200);
  EXPECT_EQ(RankSpinUs(300'000, 200, 1000, false), 600);
  EXPECT_EQ(RankSpinUs(2'000'000, 200, 1000, false), 1000);
  // A floor of 0 (OHIO_SPIN_US=0, or a node past 8 processes per CPU) never spins.
  EXPECT_EQ(RankSpinUs(300'000, 0, 1000, false), 0);
  EXPECT_EQ(RankSpinUs(300'000, 0, 1000, true), 0);
}

TEST(RankSpin, OversubscribedAcrossNodesLongCallsSleepAtOnce) {
  // Calls of up to half the ceiling spin as on a core of their own.
  EXPECT_EQ(RankSpinUs(50'000, 200, 1000, true), 200);
  EXPECT_EQ(RankSpinUs(500'000, 200, 1000, true), 1000);
  // Longer ones do not spin at all: their waits would burn the CPU the others copy with.
  EXPECT_EQ(RankSpinUs(500'500, 200, 1000, true), 0);
  EXPECT_EQ(RankSpinUs(5'000'000, 200, 1000, true), 0);
  // Not oversubscribed, or on one node (the caller passes false), they keep the ceiling.
  EXPECT_EQ(RankSpinUs(5'000'000, 200, 1000, false), 1000);
}

TEST(EnginePoll, OversubscribedItPollsOnlyWhileRanksMayWaitForIt) {
  constexpr int64_t kSpin = 50, kRoundSpin = 1000;
  auto poll = [](SpinMode m, bool mid_round, bool ranks_may_wait) {
    const EnginePoll p = ChooseEnginePoll(m, mid_round, ranks_may_wait, kSpin, kRoundSpin);
    return std::make_pair(p.budget_us, p.yield);
  };
  // A core to spare: poll without yielding, longer mid-round; whatever the calls are.
  EXPECT_EQ(poll(SpinMode::kOwnCore, false, true), std::make_pair(kSpin, false));
  EXPECT_EQ(poll(SpinMode::kOwnCore, true, true), std::make_pair(kRoundSpin, false));
  EXPECT_EQ(poll(SpinMode::kOwnCore, true, false), std::make_pair(kRoundSpin, false));
  // Oversubscribed: poll yielding while ranks may be waiting in a blocking call, mid-round or
  // not; with only nonblocking calls to move, sleep at once so that a start or a landing block
  // wakes the engine (and preempts a computing rank) instead of finding it yielded.
  EXPECT_EQ(poll(SpinMode::kYield, false, true), std::make_pair(kSpin, true));
  EXPECT_EQ(poll(SpinMode::kYield, true, true), std::make_pair(kSpin, true));
  EXPECT_EQ(poll(SpinMode::kYield, false, false).first, 0);
  EXPECT_EQ(poll(SpinMode::kYield, true, false).first, 0);
  // Far oversubscribed: never poll.
  EXPECT_EQ(poll(SpinMode::kSleep, true, true).first, 0);
  EXPECT_EQ(poll(SpinMode::kSleep, false, false).first, 0);
}

TEST(HostCpus, CgroupV2CpuMax) {
  EXPECT_EQ(CpusOfCpuMax("max 100000\n"), std::nullopt);
  EXPECT_DOUBLE_EQ(CpusOfCpuMax("150000 100000\n").value(), 1.5);
  EXPECT_DOUBLE_EQ(CpusOfCpuMax("50000 100000").value(), 0.5);
  for (const char* bad : {"", "100000", "abc 100000", "0 100000", "100000 0", "-1 100000"}) {
    EXPECT_EQ(CpusOfCpuMax(bad), std::nullopt) << bad;
  }
}

TEST(HostCpus, CgroupV1CfsQuota) {
  EXPECT_EQ(CpusOfCfsQuota("-1\n", "100000\n"), std::nullopt);
  EXPECT_DOUBLE_EQ(CpusOfCfsQuota("200000\n", "100000\n").value(), 2.0);
  EXPECT_EQ(CpusOfCfsQuota("", "100000"), std::nullopt);
  EXPECT_EQ(CpusOfCfsQuota("100000", "0"), std::nullopt);
}

TEST(HostCpus, SettingIsAutoOrANumber) {
  EXPECT_DOUBLE_EQ(CpusOfSetting("0.125"), 0.125);
  EXPECT_DOUBLE_EQ(CpusOfSetting("16"), 16.0);
  EXPECT_DOUBLE_EQ(CpusOfSetting("auto"), HostCpus());
  // What the host offers is never more than the affinity mask, and always something.
  EXPECT_GT(HostCpus(), 0.0);
  EXPECT_LE(HostCpus(), static_cast<double>(UsableCpus()));
}

}  // namespace
}  // namespace ohio
