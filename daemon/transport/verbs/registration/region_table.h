// The verbs transport's own group regions: each registered on a background thread
// (MemoryRegistrar; bounce buffers carry its puts until then), closed once every peer that may
// still write into it has acknowledged on every rail, and then deregistered, or parked with its
// registration for the next group of the same shape. Also what a put's source is (a registered
// region or not) and where a peer's bounce put or datagram may still land.
//
// It has no lock of its own: the transport calls it only under its lock (VerbsTransport::mu_).
// The registrar's lock is taken under it (Register, Deregister), never the other way.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "common/status.h"
#include "daemon/transport/transport.h"
#include "daemon/transport/verbs/registration/memory_registrar.h"

namespace ohio {

struct LocalRegion {
  // kParked: its key is dead to every peer (all acknowledged), its registration kept.
  enum class State { kPending, kRegistered, kClosing, kParked };
  State state = State::kPending;
  uint8_t* base = nullptr;
  uint64_t bytes = 0;
  std::vector<ibv_mr*> mrs;  // per rail, once registered
  bool registration_failed = false;  // bounce buffers only, for good
  std::set<std::pair<PeerId, size_t>> acks_waiting;  // (peer, rail) while closing
  bool keep_registration = false;  // closing to be parked, not deregistered
  RailTiers rail_tiers;  // the group's preferred rails (PreferRails); none: spread by key
  // A peer's bytes may still land in it (a bounce put, a datagram): its group has not closed.
  bool Writable() const { return state == State::kPending || state == State::kRegistered; }
};

class RegionTable {
 public:
  using Regions = std::map<uint64_t, LocalRegion>;
  RegionTable(MemoryRegistrar* registrar, TransportStats* stats) : registrar_(registrar), stats_(stats) {}
  // Every registration still held given back, at the transport's end (its registrar is gone).
  ~RegionTable();
  RegionTable(const RegionTable&) = delete;
  RegionTable& operator=(const RegionTable&) = delete;

  // A new region, its registration begun; its key.
  uint64_t Add(void* base, uint64_t bytes);
  // Its registration done: the region, to be announced to peers; none when it closed meanwhile
  // (then deregistered) or stays unregistered (bounce buffers only).
  const LocalRegion* Registered(uint64_t key, std::vector<ibv_mr*> mrs, const Status& status);
  // A parked region under a fresh key, registered again for a new group; none if it is not parked.
  std::optional<uint64_t> Reuse(uint64_t key);

  // Incoming bounce data for it is dropped from now on. The region when peers must be told and
  // their acknowledgements awaited (it was registered); none when nothing is left to wait for.
  LocalRegion* StartClosing(uint64_t key, bool keep);
  // Parked, or deregistered and forgotten.
  void FinishClosing(uint64_t key);
  // The peer's acknowledgement on `rail` that nothing more of its will land in region `key`.
  void Acknowledged(uint64_t key, PeerId peer, size_t rail);
  // The closing regions stop waiting for the peer: it can write nothing more into them.
  void ForgetPeer(PeerId peer);

  LocalRegion* Find(uint64_t key);
  const Regions& all() const { return regions_; }
  // Where a peer's bytes for region `key` may still land; none once its group has closed.
  LocalRegion* FindWritable(uint64_t key);
  // The registered region that holds every piece, or none (the put then goes through bounce
  // buffers).
  const LocalRegion* FindRegistered(const LocalPiece* pieces, size_t count) const;
  // The rail tiers of the region (registered or not) that holds `at`; none if no region does.
  RailTiers TiersAt(const void* at) const;
  uint32_t pending() const;

 private:
  MemoryRegistrar* registrar_;
  TransportStats* stats_;
  Regions regions_;
  std::map<uint8_t*, uint64_t> registered_by_base_;  // registered regions, to find a put's source
  uint64_t next_key_ = 1;
};

}  // namespace ohio
