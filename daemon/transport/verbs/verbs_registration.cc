// VerbsTransport's registration: a group's region (registration/region_table.h) announced to
// peers once registered, and, when it closes, announced gone to every peer that may still write
// into it; the rail tiers a group's puts are chosen by. See verbs_transport.h.
#include "daemon/transport/verbs/verbs_transport.h"

namespace ohio {

Result<uint64_t> VerbsTransport::RegisterRegion(void* base, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  return regions_->Add(base, bytes);
}

void VerbsTransport::OnRegistered(uint64_t key, std::vector<ibv_mr*> mrs, Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  const LocalRegion* r = regions_->Registered(key, std::move(mrs), status);
  if (r == nullptr) return;
  for (PeerId id = 0; id < peers_.size(); ++id) {
    if (peers_[id].state == PeerState::State::kConnected) Announce(id, key, *r);
  }
  outbox_->Wake();  // puts waiting for the region may go direct now
}

void VerbsTransport::Announce(PeerId peer, uint64_t key, const LocalRegion& r) {
  RegionAnnouncement a;
  a.addr = reinterpret_cast<uintptr_t>(r.base);
  a.bytes = r.bytes;
  for (const auto& mr : r.mrs) a.rkeys.push_back(mr->rkey);
  lines_->Enqueue(peer, VerbsWireHeader::kRegion, key, a.Encode(), 0);
}

void VerbsTransport::DeregisterRegion(uint64_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  LocalRegion* r = regions_->Find(key);
  if (r == nullptr) return;
  r->keep_registration = false;
  if (r->state == LocalRegion::State::kParked) {
    regions_->FinishClosing(key);
  } else if (r->state != LocalRegion::State::kClosing) {  // closing: FinishClosing frees it
    Close(key, false);
  }
}

bool VerbsTransport::ParkRegion(uint64_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  const LocalRegion* r = regions_->Find(key);
  if (r == nullptr) return false;
  const bool registered = r->state == LocalRegion::State::kRegistered;
  Close(key, registered);
  return registered;
}

std::optional<uint64_t> VerbsTransport::ReuseRegion(uint64_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::optional<uint64_t> fresh = regions_->Reuse(key);
  if (!fresh) return std::nullopt;
  const LocalRegion& r = *regions_->Find(*fresh);
  for (PeerId id = 0; id < peers_.size(); ++id) {
    if (peers_[id].state == PeerState::State::kConnected) Announce(id, *fresh, r);
  }
  outbox_->Wake();  // puts waiting for the region may go direct now
  return fresh;
}

void VerbsTransport::Close(uint64_t key, bool keep) {
  LocalRegion* r = regions_->StartClosing(key, keep);
  if (r == nullptr) return;
  // Peers may still write into it: tell them, and free (or park) it once every rail has said
  // that nothing more is on its way.
  for (PeerId id = 0; id < peers_.size(); ++id) {
    const PeerState& p = peers_[id];
    if (p.state != PeerState::State::kConnected || !p.move.MayWriteOverRc(p.pool.ud_service)) continue;
    for (size_t rail = 0; rail < p.rc.conns.size(); ++rail) r->acks_waiting.insert({id, rail});
    lines_->Enqueue(id, VerbsWireHeader::kRegionGone, key, "", 0);
  }
  if (r->acks_waiting.empty()) regions_->FinishClosing(key);
}

void VerbsTransport::PreferRails(uint64_t key, RailTiers tiers) {
  std::lock_guard<std::mutex> lock(mu_);
  if (LocalRegion* r = regions_->Find(key)) r->rail_tiers = std::move(tiers);
}

}  // namespace ohio
