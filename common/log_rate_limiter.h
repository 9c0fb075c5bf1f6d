// A line that a loop could write thousands of times a second (a listener out of descriptors, a
// flood of refused connections) is written at most `burst` times per `interval`; the others are
// counted, and the next line written, or a summary once the flood is over, says how many were
// left out. So the log stays small under attack and still tells the whole story.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ohio {

class LogRateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  LogRateLimiter(Clock::duration interval, uint32_t burst) : interval_(interval), burst_(burst) {}

  // Whether this occurrence's line is to be written. When true, *suppressed is how many lines
  // were left out before it (to be said in it: SuppressedNote).
  bool Allow(uint64_t* suppressed, Clock::time_point now = Clock::now());
  // Lines left out and not yet told of, once the interval they fell in is over (0 otherwise):
  // for a summary line of their own when no further occurrence comes to carry the count.
  uint64_t TakeSuppressed(Clock::time_point now = Clock::now());
  bool has_suppressed() const { return suppressed_ > 0; }
  // When TakeSuppressed will have something to give, if has_suppressed().
  Clock::time_point summary_due() const { return window_start_ + interval_; }

 private:
  const Clock::duration interval_;
  const uint32_t burst_;
  Clock::time_point window_start_{};
  uint32_t written_in_window_ = 0;
  uint64_t suppressed_ = 0;
};

// "" for 0, else " (N similar messages suppressed)", to end a line with.
std::string SuppressedNote(uint64_t suppressed);

}  // namespace ohio
