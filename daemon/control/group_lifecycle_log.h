// The lines ohiod writes as a group is created and as it closes, rate-limited per uid: a program
// that makes a communicator per step, or a user who does so on purpose, writes a few, and the
// next line written for that uid says how many were left out. Another user's lines are not
// crowded out, and the control thread, which writes them, does not spend its time on them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>

#include "common/log_rate_limiter.h"

namespace ohio {

class GroupLifecycleLog {
 public:
  using Clock = LogRateLimiter::Clock;
  static constexpr Clock::duration kInterval = std::chrono::seconds(10);
  static constexpr uint32_t kBurst = 20;  // lines per uid and interval: ten groups created and closed

  // Whether a line of uid's is to be written now; *note ends it (the lines left out before it).
  bool Allow(uid_t uid, std::string* note, Clock::time_point now = Clock::now());

 private:
  // One per uid seen lately; a uid's is dropped once its interval is over with nothing left out.
  std::map<uid_t, LogRateLimiter> limiters_;
};

}  // namespace ohio
