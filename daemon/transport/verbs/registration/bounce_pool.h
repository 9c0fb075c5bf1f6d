// The bounce buffers of one rail: registered slots that a SEND is copied into, shared by every
// peer on the rail. Small messages always go through them, and so does a put until both ends'
// regions are registered. Allocated near the HCA and registered when the transport starts, so
// that a group's first collective never waits for a registration.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "common/status.h"
#include "daemon/transport/verbs/verbs_rail.h"
#include "daemon/transport/verbs/verbs_sizes.h"
#include "daemon/transport/verbs/verbs_wire.h"

namespace ohio {

class BouncePool {
 public:
  static constexpr uint32_t kSlotBytes = verbs_sizes::kSlotBytes;
  static constexpr uint32_t kPayloadBytes = kSlotBytes - VerbsWireHeader::kBytes;
  static constexpr uint32_t kSlots = verbs_sizes::kBounceSlots;

  static Result<std::unique_ptr<BouncePool>> Create(const Rail& rail);
  ~BouncePool();
  BouncePool(const BouncePool&) = delete;
  BouncePool& operator=(const BouncePool&) = delete;

  // A free slot, taken; nullopt while every slot is in flight.
  std::optional<uint32_t> Take();
  // A slot whose send completed (or was given up on with its peer).
  void Return(uint32_t slot) { free_.push_back(slot); }
  bool exhausted() const { return free_.empty(); }
  uint8_t* at(uint32_t slot) const { return base_ + size_t{slot} * kSlotBytes; }
  uint32_t lkey() const { return mr_->lkey; }

 private:
  BouncePool() = default;
  uint8_t* base_ = nullptr;
  ibv_mr* mr_ = nullptr;
  std::vector<uint32_t> free_;
};

}  // namespace ohio
