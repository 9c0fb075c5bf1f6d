// Polling a condition a test cannot be told about (a daemon releasing a segment, a process
// stopping), every 10 ms, up to a deadline: a test never waits for ever.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace ohio::testing {

// Whether cond() held by the deadline.
inline bool WaitUntil(const std::function<bool()>& cond, std::chrono::milliseconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

}  // namespace ohio::testing
