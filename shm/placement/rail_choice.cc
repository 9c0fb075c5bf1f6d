#include "shm/placement/rail_choice.h"

namespace ohio {

size_t ChooseRail(const RailTiers& tiers, size_t connected, uint64_t key) {
  std::vector<uint32_t> usable;
  for (const std::vector<uint32_t>& tier : tiers) {
    usable.clear();
    for (uint32_t r : tier) {
      if (r < connected) usable.push_back(r);
    }
    if (!usable.empty()) return usable[key % usable.size()];
  }
  return key % connected;
}

}  // namespace ohio
