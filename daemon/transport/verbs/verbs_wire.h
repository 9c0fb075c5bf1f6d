// What travels in a verbs SEND between two daemons (puts into registered memory are RDMA
// writes and carry only their immediate). A 40-byte little-endian header, then a payload:
//   type | imm | key | offset | total      (each field below)
// kMessage     a small exchange message (ROUND_READY, CREDIT); payload = the message
// kBouncePut   part of a put that could not be written directly (a side's memory is not yet
//              registered): payload lands at `offset` in region `key`; the fragment flagged
//              last completes the put of `total` bytes and raises `imm` at the receiver
// kRegion      region `key` is registered: payload = address, bytes, then one rkey per rail
// kRegionGone  region `key` is going away: write nothing more into it
// kRegionGoneAck  sent on every rail after kRegionGone: nothing more is in flight on that rail
// kKeepalive   nothing; sent while groups wait, so a dead peer shows as a failed send
// kMoving      the pair moves to UD: payload = a MoveNotice (move_notice.h), the last SEND on
//              its rail
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/little_endian.h"

namespace ohio {

template <typename T>
inline void WirePut(uint8_t* p, T v) {
  PutLittleEndian<T>(reinterpret_cast<char*>(p), v);
}
template <typename T>
inline T WireGet(const uint8_t* p) {
  return GetLittleEndian<T>(reinterpret_cast<const char*>(p));
}

struct VerbsWireHeader {
  enum Type : uint32_t { kMessage = 1, kBouncePut = 2, kRegion = 3, kRegionGone = 4, kRegionGoneAck = 5,
                       kKeepalive = 6, kMoving = 7 };
  static constexpr uint32_t kLastFragment = 0x100;
  static constexpr size_t kBytes = 40;

  uint32_t type = 0;
  bool last = false;
  uint32_t imm = 0;
  uint64_t key = 0;
  uint64_t offset = 0;
  uint64_t total = 0;

  void Encode(uint8_t* out) const {
    WirePut<uint32_t>(out, type | (last ? kLastFragment : 0));
    WirePut<uint32_t>(out + 4, imm);
    WirePut<uint64_t>(out + 8, key);
    WirePut<uint64_t>(out + 16, offset);
    WirePut<uint64_t>(out + 24, total);
    WirePut<uint64_t>(out + 32, 0);
  }
  static std::optional<VerbsWireHeader> Decode(const uint8_t* in, size_t bytes) {
    if (bytes < kBytes) return std::nullopt;
    VerbsWireHeader h;
    const uint32_t word = WireGet<uint32_t>(in);
    h.type = word & 0xff;
    h.last = (word & kLastFragment) != 0;
    if (h.type < kMessage || h.type > kMoving) return std::nullopt;
    h.imm = WireGet<uint32_t>(in + 4);
    h.key = WireGet<uint64_t>(in + 8);
    h.offset = WireGet<uint64_t>(in + 16);
    h.total = WireGet<uint64_t>(in + 24);
    return h;
  }
};

// The payload of a kRegion SEND: address, bytes, the count of rails, then one rkey per rail.
struct RegionAnnouncement {
  static constexpr size_t kFixedBytes = 20;

  uint64_t addr = 0;
  uint64_t bytes = 0;
  std::vector<uint32_t> rkeys;  // per rail

  std::string Encode() const {
    std::string out(kFixedBytes + 4 * rkeys.size(), '\0');
    auto* b = reinterpret_cast<uint8_t*>(out.data());
    WirePut<uint64_t>(b, addr);
    WirePut<uint64_t>(b + 8, bytes);
    WirePut<uint32_t>(b + 16, static_cast<uint32_t>(rkeys.size()));
    for (size_t i = 0; i < rkeys.size(); ++i) WirePut<uint32_t>(b + kFixedBytes + 4 * i, rkeys[i]);
    return out;
  }
  // Refuses a payload too short for the rkeys it counts.
  static std::optional<RegionAnnouncement> Decode(const uint8_t* in, uint64_t bytes) {
    if (bytes < kFixedBytes) return std::nullopt;
    const uint32_t count = WireGet<uint32_t>(in + 16);
    if (bytes < kFixedBytes + 4ull * count) return std::nullopt;
    RegionAnnouncement r;
    r.addr = WireGet<uint64_t>(in);
    r.bytes = WireGet<uint64_t>(in + 8);
    r.rkeys.reserve(count);
    for (uint32_t i = 0; i < count; ++i) r.rkeys.push_back(WireGet<uint32_t>(in + kFixedBytes + 4 * i));
    return r;
  }
};

}  // namespace ohio
