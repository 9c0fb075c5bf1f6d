#include "daemon/control/failed_groups.h"

#include <algorithm>

namespace ohio {

void FailedGroups::Remember(const GroupKey& key, uid_t owner, const std::string& why, Clock::time_point until) {
  DropExpired(Clock::now());
  if (capacity_ == 0) return;
  if (kept_.size() >= capacity_ && kept_.find(key) == kept_.end()) {
    auto soonest = std::min_element(kept_.begin(), kept_.end(),
                                    [](const auto& a, const auto& b) { return a.second.until < b.second.until; });
    kept_.erase(soonest);
  }
  kept_[key] = Record{owner, why, until};
}

std::optional<std::string> FailedGroups::Told(const GroupKey& key, uid_t owner, Clock::time_point now) {
  DropExpired(now);
  auto it = kept_.find(key);
  if (it == kept_.end() || it->second.owner != owner) return std::nullopt;
  return it->second.why;
}

void FailedGroups::DropExpired(Clock::time_point now) {
  for (auto it = kept_.begin(); it != kept_.end();) {
    it = it->second.until <= now ? kept_.erase(it) : std::next(it);
  }
}

}  // namespace ohio
