// One verbs SEND from a peer daemon as the transport decodes it: the 40-byte wire header, then
// for a kRegion the region announcement and for a kMoving the move notice; and the same bytes as
// a UD datagram, whose 56-byte header must never let a payload reach past its put's end (and
// whose kMoving carries a move notice too). What decodes must encode and decode back to the same
// values; an announcement re-encodes to the bytes it was read from and never counts more rkeys
// than the payload holds.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "daemon/transport/verbs/move_notice.h"
#include "daemon/transport/verbs/ud_wire.h"
#include "daemon/transport/verbs/verbs_wire.h"
#include "tests/fuzz/fuzz_check.h"

using ohio::MoveNotice;
using ohio::RegionAnnouncement;
using ohio::UdWireHeader;
using ohio::VerbsWireHeader;

// A move notice: what decodes holds no more endpoints than allowed, is a refusal exactly when it
// has none, and re-encodes to the bytes it was read from.
static void CheckMoveNotice(const uint8_t* payload, size_t n) {
  auto m = MoveNotice::Decode(payload, n);
  if (!m) return;
  FUZZ_CHECK(m->endpoints.size() <= MoveNotice::kMaxEndpoints, "a bounded count of endpoints");
  FUZZ_CHECK(m->refused == m->endpoints.empty(), "only a refusal carries no endpoint");
  const std::string encoded = m->Encode();
  FUZZ_CHECK(encoded.size() == n && std::memcmp(encoded.data(), payload, n) == 0, "a move notice re-encodes to its bytes");
}

// A UD datagram: what decodes places its payload inside its put and round-trips.
static void CheckUdDatagram(const uint8_t* data, size_t size) {
  auto u = UdWireHeader::Decode(data, size);
  if (!u) return;
  const uint64_t payload = size - UdWireHeader::kBytes;
  FUZZ_CHECK(u->type >= UdWireHeader::kData && u->type <= UdWireHeader::kMoving, "a known type");
  FUZZ_CHECK((u->type != UdWireHeader::kAck && u->type != UdWireHeader::kKeepalive) || payload == 0,
             "an ack or a keepalive carries nothing");
  FUZZ_CHECK(u->type != UdWireHeader::kData || (u->total <= UINT32_MAX && u->at <= u->total && u->at + payload <= u->total),
             "a fragment's bytes lie inside its put, of less than 4 GiB");
  uint8_t again[UdWireHeader::kBytes];
  u->Encode(again);
  auto back = UdWireHeader::Decode(again, sizeof(again));
  FUZZ_CHECK(back && back->type == u->type && back->seq == u->seq && back->ack == u->ack && back->imm == u->imm &&
                 back->sack == u->sack && back->key == u->key && back->start == u->start &&
                 back->total == u->total && back->put == u->put && back->at == u->at,
             "a UD header round-trips");
  FUZZ_CHECK(std::memcmp(again, data, UdWireHeader::kBytes) == 0, "a UD header re-encodes to its bytes");
  if (u->type == UdWireHeader::kMoving) CheckMoveNotice(data + UdWireHeader::kBytes, payload);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  CheckUdDatagram(data, size);
  auto h = VerbsWireHeader::Decode(data, size);
  if (!h) return 0;
  FUZZ_CHECK(size >= VerbsWireHeader::kBytes, "a header needs its 40 bytes");
  FUZZ_CHECK(h->type >= VerbsWireHeader::kMessage && h->type <= VerbsWireHeader::kMoving, "a known type");
  uint8_t again[VerbsWireHeader::kBytes];
  h->Encode(again);
  auto back = VerbsWireHeader::Decode(again, sizeof(again));
  FUZZ_CHECK(back && back->type == h->type && back->last == h->last && back->imm == h->imm && back->key == h->key &&
                 back->offset == h->offset && back->total == h->total,
             "a header round-trips");
  FUZZ_CHECK(std::memcmp(again + 4, data + 4, 28) == 0, "imm, key, offset and total re-encode to their bytes");

  const uint8_t* payload = data + VerbsWireHeader::kBytes;
  const uint64_t n = size - VerbsWireHeader::kBytes;
  if (h->type == VerbsWireHeader::kMoving) CheckMoveNotice(payload, n);
  if (h->type != VerbsWireHeader::kRegion) return 0;
  auto a = RegionAnnouncement::Decode(payload, n);
  if (!a) return 0;
  const std::string encoded = a->Encode();
  FUZZ_CHECK(encoded.size() == RegionAnnouncement::kFixedBytes + 4 * a->rkeys.size(), "the announcement's size");
  FUZZ_CHECK(encoded.size() <= n, "an announcement counts no more rkeys than its payload holds");
  FUZZ_CHECK(std::memcmp(encoded.data(), payload, encoded.size()) == 0, "an announcement re-encodes to its bytes");
  auto b = RegionAnnouncement::Decode(reinterpret_cast<const uint8_t*>(encoded.data()), encoded.size());
  FUZZ_CHECK(b && b->addr == a->addr && b->bytes == a->bytes && b->rkeys == a->rkeys, "an announcement round-trips");
  return 0;
}
