#include "daemon/transport/verbs/rc/in_flight_table.h"

namespace ohio {
namespace {

constexpr int kSlotBits = 24;
constexpr uint64_t kSlotMask = (1ull << kSlotBits) - 1;

}  // namespace

uint64_t InFlightTable::Track(InFlight f) {
  uint32_t index;
  if (free_.empty()) {
    index = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    index = free_.back();
    free_.pop_back();
  }
  f.wr_id = next_wr_++ << kSlotBits | index;
  slots_[index] = std::move(f);
  return slots_[index].wr_id;
}

std::optional<InFlight> InFlightTable::Complete(uint64_t wr_id) {
  const auto index = static_cast<uint32_t>(wr_id & kSlotMask);
  if (index >= slots_.size() || slots_[index].wr_id != wr_id) return std::nullopt;
  const InFlight f = slots_[index];
  Release(index);
  return f;
}

void InFlightTable::ReleasePeer(PeerId peer, const std::function<void(const InFlight&)>& released) {
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    const InFlight& f = slots_[i];
    if (f.wr_id == 0 || f.peer != peer) continue;
    released(f);
    Release(i);
  }
}

bool InFlightTable::AnyFor(PeerId peer) const {
  for (const InFlight& f : slots_) {
    if (f.wr_id != 0 && f.peer == peer) return true;
  }
  return false;
}

void InFlightTable::Release(uint32_t index) {
  slots_[index].wr_id = 0;
  free_.push_back(index);
}

}  // namespace ohio
