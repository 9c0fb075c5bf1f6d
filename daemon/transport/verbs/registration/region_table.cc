#include "daemon/transport/verbs/registration/region_table.h"

#include <iterator>

#include <spdlog/spdlog.h>

namespace ohio {

RegionTable::~RegionTable() {
  for (auto& [key, r] : regions_) {
    for (ibv_mr* mr : r.mrs) ibv_dereg_mr(mr);
  }
}

uint64_t RegionTable::Add(void* base, uint64_t bytes) {
  const uint64_t key = next_key_++;
  LocalRegion& r = regions_[key];
  r.base = static_cast<uint8_t*>(base);
  r.bytes = bytes;
  registrar_->Register(key, base, bytes);
  return key;
}

const LocalRegion* RegionTable::Registered(uint64_t key, std::vector<ibv_mr*> mrs, const Status& status) {
  auto it = regions_.find(key);
  if (it == regions_.end() || it->second.state == LocalRegion::State::kClosing) {
    registrar_->Deregister(std::move(mrs));  // the group closed while it was being registered
    if (it != regions_.end()) regions_.erase(it);
    return nullptr;
  }
  LocalRegion& r = it->second;
  if (!status.ok()) {
    // The group still works, through bounce buffers only.
    spdlog::warn("verbs: region {} ({} bytes) stays unregistered: {}", key, r.bytes, status.message());
    r.registration_failed = true;
    return nullptr;
  }
  r.mrs = std::move(mrs);
  r.state = LocalRegion::State::kRegistered;
  registered_by_base_[r.base] = key;
  ++stats_->registrations;
  stats_->registered_bytes += r.bytes;
  return &r;
}

std::optional<uint64_t> RegionTable::Reuse(uint64_t key) {
  auto it = regions_.find(key);
  if (it == regions_.end() || it->second.state != LocalRegion::State::kParked) return std::nullopt;
  const uint64_t fresh = next_key_++;
  LocalRegion& r = regions_[fresh] = std::move(it->second);
  regions_.erase(it);
  r.state = LocalRegion::State::kRegistered;
  r.keep_registration = false;
  r.rail_tiers.clear();  // the next group's own, once it is placed
  registered_by_base_[r.base] = fresh;
  return fresh;
}

LocalRegion* RegionTable::StartClosing(uint64_t key, bool keep) {
  auto it = regions_.find(key);
  if (it == regions_.end()) return nullptr;
  LocalRegion& r = it->second;
  const bool registered = r.state == LocalRegion::State::kRegistered;
  r.state = LocalRegion::State::kClosing;  // incoming bounce data for it is dropped from now on
  r.keep_registration = keep;
  if (r.registration_failed) {
    regions_.erase(it);
    return nullptr;
  }
  if (!registered) return nullptr;  // Registered finishes it
  registered_by_base_.erase(r.base);
  return &r;
}

void RegionTable::FinishClosing(uint64_t key) {
  auto it = regions_.find(key);
  if (it == regions_.end()) return;
  if (it->second.keep_registration) {
    it->second.state = LocalRegion::State::kParked;
    return;
  }
  ++stats_->deregistrations;
  stats_->registered_bytes -= it->second.bytes;
  registrar_->Deregister(std::move(it->second.mrs));
  regions_.erase(it);
}

void RegionTable::Acknowledged(uint64_t key, PeerId peer, size_t rail) {
  auto it = regions_.find(key);
  if (it == regions_.end() || it->second.state != LocalRegion::State::kClosing) return;
  it->second.acks_waiting.erase({peer, rail});
  if (it->second.acks_waiting.empty()) FinishClosing(key);
}

void RegionTable::ForgetPeer(PeerId peer) {
  std::vector<uint64_t> closed;
  for (auto& [key, r] : regions_) {
    if (r.state != LocalRegion::State::kClosing) continue;
    for (auto it = r.acks_waiting.begin(); it != r.acks_waiting.end();) {
      it = it->first == peer ? r.acks_waiting.erase(it) : std::next(it);
    }
    if (r.acks_waiting.empty() && !r.mrs.empty()) closed.push_back(key);
  }
  for (uint64_t key : closed) FinishClosing(key);
}

LocalRegion* RegionTable::Find(uint64_t key) {
  auto it = regions_.find(key);
  return it == regions_.end() ? nullptr : &it->second;
}

LocalRegion* RegionTable::FindWritable(uint64_t key) {
  LocalRegion* r = Find(key);
  return r != nullptr && r->Writable() ? r : nullptr;
}

const LocalRegion* RegionTable::FindRegistered(const LocalPiece* pieces, size_t count) const {
  if (count == 0) return nullptr;
  auto* first = static_cast<uint8_t*>(const_cast<void*>(pieces[0].base));
  auto it = registered_by_base_.upper_bound(first);
  if (it == registered_by_base_.begin()) return nullptr;
  const LocalRegion& r = regions_.at(std::prev(it)->second);
  for (size_t i = 0; i < count; ++i) {
    const LocalPiece& p = pieces[i];
    const auto* b = static_cast<const uint8_t*>(p.base);
    if (b < r.base || b + p.bytes > r.base + r.bytes) return nullptr;
  }
  return &r;
}

RailTiers RegionTable::TiersAt(const void* at) const {
  const auto* byte = static_cast<const uint8_t*>(at);
  const LocalRegion* found = nullptr;
  for (const auto& [k, r] : regions_) {
    if (byte >= r.base && byte < r.base + r.bytes) found = &r;
  }
  return found != nullptr ? found->rail_tiers : RailTiers{};
}

uint32_t RegionTable::pending() const {
  uint32_t n = 0;
  for (const auto& [key, r] : regions_) n += r.state == LocalRegion::State::kPending;
  return n;
}

}  // namespace ohio
