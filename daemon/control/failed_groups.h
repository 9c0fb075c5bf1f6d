#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "daemon/engine/group_spec.h"

namespace ohio {

// Groups spanning nodes that failed here and were forgotten once their local ranks had all
// left. Another node whose rank arrives after that asks this one about the group; without a
// record it would hear "no rank has joined here yet" and wait its whole timeout for a group no
// rank here will join again. With one it is told why the group failed, as a node that meets a
// live failed group is. Each record lasts the group's timeout; at most `capacity` are kept (the
// soonest to expire go first), so failing groups on purpose holds bounded memory.
class FailedGroups {
 public:
  using Clock = std::chrono::steady_clock;
  explicit FailedGroups(size_t capacity) : capacity_(capacity) {}

  void Remember(const GroupKey& key, uid_t owner, const std::string& why, Clock::time_point until);
  // Why the group failed, for a node asking on behalf of `owner`'s ranks; nothing if no record
  // is kept (or it is another uid's: a key of another user's group tells nothing).
  std::optional<std::string> Told(const GroupKey& key, uid_t owner, Clock::time_point now);
  size_t size() const { return kept_.size(); }

 private:
  struct Record {
    uid_t owner;
    std::string why;
    Clock::time_point until;
  };
  void DropExpired(Clock::time_point now);
  size_t capacity_;
  std::map<GroupKey, Record> kept_;
};

}  // namespace ohio
