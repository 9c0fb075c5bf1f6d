// VerbsTransport's registration: a group's region registered in the background (bounce
// buffers until then), announced to peers, closed once every rail acknowledged, parked for the
// next group of the same shape, and which rail a group's puts take. See verbs_transport.h.
#include "daemon/transport/verbs/verbs_transport.h"

#include <spdlog/spdlog.h>

namespace ohio {

Result<uint64_t> VerbsTransport::RegisterRegion(void* base, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t key = next_key_++;
  LocalRegion& r = regions_[key];
  r.base = static_cast<uint8_t*>(base);
  r.bytes = bytes;
  registrar_->Register(key, base, bytes);
  return key;
}

void VerbsTransport::OnRegistered(uint64_t key, std::vector<ibv_mr*> mrs, Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.find(key);
  if (it == regions_.end() || it->second.state == LocalRegion::State::kClosing) {
    registrar_->Deregister(std::move(mrs));  // the group closed while it was being registered
    if (it != regions_.end()) regions_.erase(it);
    return;
  }
  LocalRegion& r = it->second;
  if (!status.ok()) {
    // The group still works, through bounce buffers only.
    spdlog::warn("verbs: region {} ({} bytes) stays unregistered: {}", key, r.bytes, status.message());
    r.registration_failed = true;
    return;
  }
  r.mrs = std::move(mrs);
  r.state = LocalRegion::State::kRegistered;
  registered_by_base_[r.base] = key;
  ++stats_.registrations;
  stats_.registered_bytes += r.bytes;
  for (PeerId id = 0; id < peers_.size(); ++id) {
    if (peers_[id].state == PeerState::State::kConnected) Announce(id, key, r);
  }
  Wake();  // puts waiting for the region may go direct now
}

void VerbsTransport::Announce(PeerId peer, uint64_t key, const LocalRegion& r) {
  RegionAnnouncement a;
  a.addr = reinterpret_cast<uintptr_t>(r.base);
  a.bytes = r.bytes;
  for (const auto& mr : r.mrs) a.rkeys.push_back(mr->rkey);
  EnqueueControl(peer, VerbsWireHeader::kRegion, key, a.Encode(), 0);
}

void VerbsTransport::DeregisterRegion(uint64_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.find(key);
  if (it == regions_.end()) return;
  LocalRegion& r = it->second;
  r.keep_registration = false;
  if (r.state == LocalRegion::State::kParked) {
    FinishClosing(key);
  } else if (r.state != LocalRegion::State::kClosing) {  // closing: FinishClosing frees it
    Close(it, false);
  }
}

bool VerbsTransport::ParkRegion(uint64_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.find(key);
  if (it == regions_.end()) return false;
  const bool registered = it->second.state == LocalRegion::State::kRegistered;
  Close(it, registered);
  return registered;
}

std::optional<uint64_t> VerbsTransport::ReuseRegion(uint64_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.find(key);
  if (it == regions_.end() || it->second.state != LocalRegion::State::kParked) return std::nullopt;
  const uint64_t fresh = next_key_++;
  LocalRegion& r = regions_[fresh] = std::move(it->second);
  regions_.erase(it);
  r.state = LocalRegion::State::kRegistered;
  r.keep_registration = false;
  r.rail_tiers.clear();  // the next group's own, once it is placed
  registered_by_base_[r.base] = fresh;
  for (PeerId id = 0; id < peers_.size(); ++id) {
    if (peers_[id].state == PeerState::State::kConnected) Announce(id, fresh, r);
  }
  Wake();  // puts waiting for the region may go direct now
  return fresh;
}

void VerbsTransport::Close(std::map<uint64_t, LocalRegion>::iterator it, bool keep) {
  const uint64_t key = it->first;
  LocalRegion& r = it->second;
  const bool registered = r.state == LocalRegion::State::kRegistered;
  r.state = LocalRegion::State::kClosing;  // incoming bounce data for it is dropped from now on
  r.keep_registration = keep;
  if (r.registration_failed) {
    regions_.erase(it);
    return;
  }
  if (!registered) return;  // OnRegistered finishes it
  registered_by_base_.erase(r.base);
  // Peers may still write into it: tell them, and free (or park) it once every rail has said
  // that nothing more is on its way.
  for (PeerId id = 0; id < peers_.size(); ++id) {
    const PeerState& p = peers_[id];
    if (p.state != PeerState::State::kConnected || !p.move.MayWriteOverRc(p.pool.ud_service)) continue;
    for (size_t rail = 0; rail < p.rc.conns.size(); ++rail) r.acks_waiting.insert({id, rail});
    EnqueueControl(id, VerbsWireHeader::kRegionGone, key, "", 0);
  }
  if (r.acks_waiting.empty()) FinishClosing(key);
}

void VerbsTransport::FinishClosing(uint64_t key) {
  auto it = regions_.find(key);
  if (it == regions_.end()) return;
  if (it->second.keep_registration) {
    it->second.state = LocalRegion::State::kParked;
    return;
  }
  ++stats_.deregistrations;
  stats_.registered_bytes -= it->second.bytes;
  registrar_->Deregister(std::move(it->second.mrs));
  regions_.erase(it);
}

const VerbsTransport::LocalRegion* VerbsTransport::FindRegistered(const LocalPiece* pieces, size_t count) const {
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

size_t VerbsTransport::PutRail(PeerState& p, uint64_t key, const LocalPiece* pieces, size_t count) {
  // One rail per remote region (a group's segment there): a group's puts to a peer land in the
  // order they were posted, which eager rounds rely on (a slot's round k put must not overtake
  // its round k-2 put), so the rail is chosen once and kept for the region's life. Chosen at
  // the first put, not at registration: a group registers its segment when its first rank
  // joins, but its rail tiers come with its segment placement, once every local rank has
  // joined (GroupRegistry), which its first put cannot precede (a round needs every local
  // rank's data). Groups with no tiers (no placement, or all rails equally near) spread over
  // the rails by key.
  auto [it, first] = p.rc.put_rails.try_emplace(key, 0);
  if (!first) return it->second;
  const LocalRegion* local = nullptr;
  if (count > 0) {
    const auto* at = static_cast<const uint8_t*>(pieces[0].base);
    for (const auto& [k, r] : regions_) {
      if (at >= r.base && at < r.base + r.bytes) local = &r;
    }
  }
  it->second = ChooseRail(local != nullptr ? local->rail_tiers : RailTiers{}, p.rc.conns.size(), key);
  return it->second;
}

void VerbsTransport::PreferRails(uint64_t key, RailTiers tiers) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.find(key);
  if (it != regions_.end()) it->second.rail_tiers = std::move(tiers);
}

}  // namespace ohio
