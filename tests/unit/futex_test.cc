#include "shm/futex.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <new>
#include <thread>

namespace ohio {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(Futex, WaitTimesOutWhenNobodyWakes) {
  std::atomic<uint32_t> word{17};
  const auto start = Clock::now();
  FutexWait(&word, 17, milliseconds(100));
  EXPECT_LT(Clock::now() - start, seconds(5));
  EXPECT_EQ(word.load(), 17u);
}

TEST(Futex, WaitReturnsAtOnceWhenTheWordDiffers) {
  std::atomic<uint32_t> word{1};
  const auto start = Clock::now();
  FutexWait(&word, 0, seconds(15));
  EXPECT_LT(Clock::now() - start, seconds(5));
  EXPECT_EQ(word.load(), 1u);
}

TEST(Futex, NonPositiveTimeoutDoesNotSleep) {
  std::atomic<uint32_t> word{0};
  const auto start = Clock::now();
  FutexWait(&word, 0, milliseconds(0));
  FutexWait(&word, 0, milliseconds(-5));
  EXPECT_LT(Clock::now() - start, seconds(5));
}

TEST(Futex, WakeWithNoWaiterIsHarmless) {
  std::atomic<uint32_t> word{3};
  FutexWakeAll(&word);
  EXPECT_EQ(word.load(), 3u);
}

// Each wait is far longer than the deadline, so the waiters only see the change in time if
// FutexWakeAll really wakes them.
TEST(Futex, WakeAllWakesEveryWaitingThread) {
  std::atomic<uint32_t> word{0};
  constexpr int kWaiters = 3;
  std::atomic<int> seen{0};
  std::atomic<int> started{0};
  std::thread waiters[kWaiters];
  for (auto& t : waiters) {
    t = std::thread([&] {
      ++started;
      const auto deadline = Clock::now() + seconds(10);
      while (word.load() == 0 && Clock::now() < deadline) FutexWait(&word, 0, seconds(15));
      if (word.load() == 1 && Clock::now() < deadline) ++seen;
    });
  }
  while (started.load() < kWaiters) std::this_thread::yield();
  std::this_thread::sleep_for(milliseconds(200));  // let them go to sleep
  word.store(1);
  FutexWakeAll(&word);
  for (auto& t : waiters) t.join();
  EXPECT_EQ(seen.load(), kWaiters);
}

// The word lives in memory shared between processes, as in a group segment: a wake from
// another process must reach the waiter (a private futex would not).
TEST(Futex, WakeReachesAnotherProcess) {
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  auto* word = new (p) std::atomic<uint32_t>(0);
  auto* ready = new (static_cast<char*>(p) + 64) std::atomic<uint32_t>(0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ready->store(1);
    const auto deadline = Clock::now() + seconds(10);
    while (word->load() == 0 && Clock::now() < deadline) FutexWait(word, 0, seconds(15));
    _exit(word->load() == 1 && Clock::now() < deadline ? 0 : 1);
  }
  while (ready->load() == 0) std::this_thread::yield();
  std::this_thread::sleep_for(milliseconds(200));
  word->store(1);
  FutexWakeAll(word);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child did not see the change within 10 s";
  munmap(p, 4096);
}

}  // namespace
}  // namespace ohio
