// The tags multi-node groups are known by in immediates and exchange messages. A tag stays
// taken until its group is destroyed (which may be after its ranks left, while its last sends
// drain), and freed tags are handed out round-robin so one is reused as late as possible.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

namespace ohio {

class TagPool {
 public:
  explicit TagPool(uint32_t tags) : used_(tags, false) {}

  std::optional<uint32_t> Allocate() {
    std::lock_guard<std::mutex> lock(mu_);
    for (uint32_t tries = 0; tries < used_.size(); ++tries) {
      const uint32_t tag = next_;
      next_ = (next_ + 1) % used_.size();
      if (!used_[tag]) {
        used_[tag] = true;
        return tag;
      }
    }
    return std::nullopt;
  }

  void Release(uint32_t tag) {
    std::lock_guard<std::mutex> lock(mu_);
    used_[tag] = false;
  }

 private:
  std::mutex mu_;
  std::vector<bool> used_;
  uint32_t next_ = 0;
};

}  // namespace ohio
