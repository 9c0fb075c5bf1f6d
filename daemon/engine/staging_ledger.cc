#include "daemon/engine/staging_ledger.h"

#include <algorithm>

namespace ohio {

uint64_t StagingLedger::Take(uid_t uid, uint64_t want, uint64_t floor) {
  std::lock_guard<std::mutex> lock(mu_);
  Use& use = users_[uid];
  const uint64_t used_by_uid = use.segments + use.staging;
  const uint64_t used = segments_ + staging_;
  const uint64_t room_of_uid = user_limit_ > used_by_uid ? user_limit_ - used_by_uid : 0;
  const uint64_t room = memory_limit_ > used ? memory_limit_ - used : 0;
  const uint64_t granted = std::max(std::min({want, room_of_uid, room}), std::min(want, floor));
  use.staging += granted;
  staging_ += granted;
  return granted;
}

void StagingLedger::Give(uid_t uid, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = users_.find(uid);
  if (it == users_.end()) return;
  bytes = std::min(bytes, it->second.staging);
  it->second.staging -= bytes;
  staging_ -= bytes;
  if (it->second.staging == 0 && it->second.segments == 0) users_.erase(it);
}

void StagingLedger::SetSegments(uid_t uid, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  Use& use = users_[uid];
  segments_ = segments_ - use.segments + bytes;
  use.segments = bytes;
  if (use.staging == 0 && use.segments == 0) users_.erase(uid);
}

uint64_t StagingLedger::staging_of(uid_t uid) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = users_.find(uid);
  return it == users_.end() ? 0 : it->second.staging;
}

uint64_t StagingLedger::staging_total() const {
  std::lock_guard<std::mutex> lock(mu_);
  return staging_;
}

}  // namespace ohio
