#include "daemon/control/group_lifecycle_log.h"

namespace ohio {

bool GroupLifecycleLog::Allow(uid_t uid, std::string* note, Clock::time_point now) {
  for (auto it = limiters_.begin(); it != limiters_.end();) {
    const bool idle = it->first != uid && !it->second.has_suppressed() && now >= it->second.summary_due();
    it = idle ? limiters_.erase(it) : std::next(it);
  }
  auto it = limiters_.try_emplace(uid, kInterval, kBurst).first;
  uint64_t suppressed = 0;
  if (!it->second.Allow(&suppressed, now)) return false;
  *note = SuppressedNote(suppressed);
  return true;
}

}  // namespace ohio
