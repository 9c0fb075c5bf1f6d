#include "daemon/transport/verbs/registration/bounce_pool.h"

#include <sys/mman.h>

#include <cerrno>

namespace ohio {

Result<std::unique_ptr<BouncePool>> BouncePool::Create(const Rail& rail) {
  std::unique_ptr<BouncePool> pool(new BouncePool());
  pool->base_ = static_cast<uint8_t*>(rail.AllocateNear(size_t{kSlots} * kSlotBytes));
  if (pool->base_ == nullptr) return SystemError("allocating bounce buffers", errno);
  pool->mr_ = ibv_reg_mr(rail.pd(), pool->base_, size_t{kSlots} * kSlotBytes, IBV_ACCESS_LOCAL_WRITE);
  if (pool->mr_ == nullptr) return SystemError("registering bounce buffers on " + rail.name(), errno);
  // Slot 0 is taken first.
  for (uint32_t s = 0; s < kSlots; ++s) pool->free_.push_back(kSlots - 1 - s);
  return pool;
}

BouncePool::~BouncePool() {
  if (mr_ != nullptr) ibv_dereg_mr(mr_);
  if (base_ != nullptr) munmap(base_, size_t{kSlots} * kSlotBytes);
}

std::optional<uint32_t> BouncePool::Take() {
  if (free_.empty()) return std::nullopt;
  const uint32_t slot = free_.back();
  free_.pop_back();
  return slot;
}

}  // namespace ohio
