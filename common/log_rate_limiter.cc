#include "common/log_rate_limiter.h"

namespace ohio {

bool LogRateLimiter::Allow(uint64_t* suppressed, Clock::time_point now) {
  if (now - window_start_ >= interval_) {
    window_start_ = now;
    written_in_window_ = 0;
  }
  if (written_in_window_ >= burst_) {
    ++suppressed_;
    return false;
  }
  ++written_in_window_;
  *suppressed = suppressed_;
  suppressed_ = 0;
  return true;
}

uint64_t LogRateLimiter::TakeSuppressed(Clock::time_point now) {
  if (suppressed_ == 0 || now - window_start_ < interval_) return 0;
  const uint64_t n = suppressed_;
  suppressed_ = 0;
  // The summary counts as a line of a new window.
  window_start_ = now;
  written_in_window_ = 1;
  return n;
}

std::string SuppressedNote(uint64_t suppressed) {
  if (suppressed == 0) return "";
  return " (" + std::to_string(suppressed) + " similar message" + (suppressed == 1 ? "" : "s") + " suppressed)";
}

}  // namespace ohio
