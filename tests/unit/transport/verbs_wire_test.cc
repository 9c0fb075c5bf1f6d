// What daemons tell each other over verbs, checked without RDMA: the SEND header, the UD
// datagram header and the region announcement round-trip and garbage is refused; queue pair endpoints from the peer service are refused when no port
// could have sent them. (The transport itself is tested on Soft-RoCE, tests/vm.)
#include <gtest/gtest.h>

#include <cstring>

#include "daemon/peers/endpoint_proto.h"
#include "daemon/transport/verbs/move_notice.h"
#include "daemon/transport/verbs/ud_wire.h"
#include "daemon/transport/verbs/verbs_wire.h"

namespace ohio {
namespace {

TEST(VerbsWireHeader, RoundTripsEveryField) {
  VerbsWireHeader h;
  h.type = VerbsWireHeader::kBouncePut;
  h.last = true;
  h.imm = 0xDEADBEEF;
  h.key = 0x0102030405060708ull;
  h.offset = 1ull << 40;
  h.total = 4u << 20;
  uint8_t buf[VerbsWireHeader::kBytes];
  h.Encode(buf);
  auto d = VerbsWireHeader::Decode(buf, sizeof(buf));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->type, h.type);
  EXPECT_TRUE(d->last);
  EXPECT_EQ(d->imm, h.imm);
  EXPECT_EQ(d->key, h.key);
  EXPECT_EQ(d->offset, h.offset);
  EXPECT_EQ(d->total, h.total);
  h.last = false;
  h.type = VerbsWireHeader::kMessage;
  h.Encode(buf);
  d = VerbsWireHeader::Decode(buf, sizeof(buf));
  ASSERT_TRUE(d.has_value());
  EXPECT_FALSE(d->last);
  EXPECT_EQ(d->type, VerbsWireHeader::kMessage);
  EXPECT_EQ(buf[0], VerbsWireHeader::kMessage) << "little-endian on the wire";
}

TEST(VerbsWireHeader, RefusesShortAndUnknown) {
  uint8_t buf[VerbsWireHeader::kBytes] = {};
  VerbsWireHeader h;
  h.type = VerbsWireHeader::kKeepalive;
  h.Encode(buf);
  EXPECT_FALSE(VerbsWireHeader::Decode(buf, VerbsWireHeader::kBytes - 1).has_value());
  buf[0] = 0;
  EXPECT_FALSE(VerbsWireHeader::Decode(buf, sizeof(buf)).has_value());
  buf[0] = 8;
  EXPECT_FALSE(VerbsWireHeader::Decode(buf, sizeof(buf)).has_value());
}

TEST(RegionAnnouncement, RoundTripsAndRefusesMoreRkeysThanItHolds) {
  RegionAnnouncement a;
  a.addr = 0x7f0000001000;
  a.bytes = 8 << 20;
  a.rkeys = {0x1234, 0x5678};
  const std::string wire = a.Encode();
  ASSERT_EQ(wire.size(), RegionAnnouncement::kFixedBytes + 8);
  const auto* bytes = reinterpret_cast<const uint8_t*>(wire.data());
  auto d = RegionAnnouncement::Decode(bytes, wire.size());
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->addr, a.addr);
  EXPECT_EQ(d->bytes, a.bytes);
  EXPECT_EQ(d->rkeys, a.rkeys);
  // One rkey short, and no room for the count itself.
  EXPECT_FALSE(RegionAnnouncement::Decode(bytes, wire.size() - 1).has_value());
  EXPECT_FALSE(RegionAnnouncement::Decode(bytes, RegionAnnouncement::kFixedBytes - 1).has_value());
  // A count of 2^32-1 rkeys in a 28-byte payload is refused, not read past the end.
  std::string lying = wire;
  WirePut<uint32_t>(reinterpret_cast<uint8_t*>(lying.data()) + 16, 0xffffffffu);
  EXPECT_FALSE(RegionAnnouncement::Decode(reinterpret_cast<const uint8_t*>(lying.data()), lying.size()).has_value());
}

peer::QueuePairEndpoint Good() {
  QpEndpoint e;
  for (int i = 0; i < 16; ++i) e.gid[i] = static_cast<uint8_t>(0xfe + i);
  e.lid = 7;
  e.qpn = 0x123456;
  e.psn = 0xabcdef;
  e.mtu = IBV_MTU_4096;
  e.rail = "mlx5_0:1";
  peer::QueuePairEndpoint p;
  EndpointToProto(e, &p);
  return p;
}

TEST(UdWireHeader, RoundTripsEveryField) {
  UdWireHeader h;
  h.type = UdWireHeader::kData;
  h.seq = 0xFFFFFFFE;
  h.ack = 0x01020304;
  h.imm = 0xDEADBEEF;
  h.sack = 0x8000000000000001ull;
  h.key = 0x0102030405060708ull;
  h.start = 1ull << 40;
  h.total = 0xFFFFFFFFull;
  h.put = 77;
  h.at = 0xFFFFFFFFu - 4096;
  uint8_t buf[UdWireHeader::kBytes + 4096];
  h.Encode(buf);
  auto d = UdWireHeader::Decode(buf, sizeof(buf));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->type, h.type);
  EXPECT_EQ(d->seq, h.seq);
  EXPECT_EQ(d->ack, h.ack);
  EXPECT_EQ(d->imm, h.imm);
  EXPECT_EQ(d->sack, h.sack);
  EXPECT_EQ(d->key, h.key);
  EXPECT_EQ(d->start, h.start);
  EXPECT_EQ(d->total, h.total);
  EXPECT_EQ(d->put, h.put);
  EXPECT_EQ(d->at, h.at);
}

// A datagram is refused when it could not have been sent: too short for its header, an unknown
// type, an ack or a keepalive carrying a payload, or data of a put of 4 GiB or more, or whose payload reaches
// past the end of its put.
TEST(UdWireHeader, RefusesWhatNoDaemonSends) {
  uint8_t buf[UdWireHeader::kBytes + 100] = {};
  UdWireHeader h;
  h.type = UdWireHeader::kData;
  h.start = ~uint64_t{0};  // where in the region is the receiver's to check
  h.at = 900;
  h.total = 1000;
  h.Encode(buf);
  EXPECT_TRUE(UdWireHeader::Decode(buf, UdWireHeader::kBytes + 100).has_value());   // 900..1000
  EXPECT_FALSE(UdWireHeader::Decode(buf, UdWireHeader::kBytes + 101).has_value());  // one byte past
  EXPECT_FALSE(UdWireHeader::Decode(buf, UdWireHeader::kBytes - 1).has_value());
  h.at = 1001;
  h.Encode(buf);
  EXPECT_FALSE(UdWireHeader::Decode(buf, UdWireHeader::kBytes).has_value());  // starts past the end
  h.at = 0xFFFFFFFFu;
  h.total = 0xFFFFFFFFu;
  h.Encode(buf);
  EXPECT_TRUE(UdWireHeader::Decode(buf, UdWireHeader::kBytes).has_value());       // empty, at the end
  EXPECT_FALSE(UdWireHeader::Decode(buf, UdWireHeader::kBytes + 1).has_value());  // no overflow
  h.total = 1ull << 32;
  h.Encode(buf);
  EXPECT_FALSE(UdWireHeader::Decode(buf, UdWireHeader::kBytes).has_value());  // a put too large for UD
  h = UdWireHeader();
  h.type = UdWireHeader::kAck;
  h.Encode(buf);
  EXPECT_TRUE(UdWireHeader::Decode(buf, UdWireHeader::kBytes).has_value());
  EXPECT_FALSE(UdWireHeader::Decode(buf, UdWireHeader::kBytes + 1).has_value());
  h.type = UdWireHeader::kKeepalive;
  h.Encode(buf);
  EXPECT_TRUE(UdWireHeader::Decode(buf, UdWireHeader::kBytes).has_value());
  EXPECT_FALSE(UdWireHeader::Decode(buf, UdWireHeader::kBytes + 1).has_value());
  h.type = UdWireHeader::kMessage;  // its payload is the message
  h.Encode(buf);
  EXPECT_TRUE(UdWireHeader::Decode(buf, UdWireHeader::kBytes + 24).has_value());
  for (uint32_t type : {0u, 6u, 0x101u}) {
    WirePut<uint32_t>(buf, type);
    EXPECT_FALSE(UdWireHeader::Decode(buf, UdWireHeader::kBytes).has_value()) << type;
  }
}

TEST(MoveNotice, RoundTripsEndpointsAndFlags) {
  MoveNotice m;
  m.to_rc = true;
  m.reply = true;
  for (uint32_t r = 0; r < 2; ++r) {
    QpEndpoint e;
    for (size_t i = 0; i < 16; ++i) e.gid[i] = static_cast<uint8_t>(i * 7 + r);
    e.lid = static_cast<uint16_t>(0x1234 + r);
    e.qpn = 0xabcdef + r;
    e.psn = 0x123456 + r;
    e.mtu = IBV_MTU_4096;
    e.rail = "rxe" + std::to_string(r) + ":1";
    m.endpoints.push_back(e);
  }
  const std::string wire = m.Encode();
  auto back = MoveNotice::Decode(reinterpret_cast<const uint8_t*>(wire.data()), wire.size());
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(back->to_rc);
  EXPECT_TRUE(back->reply);
  EXPECT_FALSE(back->refused);
  ASSERT_EQ(back->endpoints.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(back->endpoints[r].gid, m.endpoints[r].gid);
    EXPECT_EQ(back->endpoints[r].lid, m.endpoints[r].lid);
    EXPECT_EQ(back->endpoints[r].qpn, m.endpoints[r].qpn);
    EXPECT_EQ(back->endpoints[r].psn, m.endpoints[r].psn);
    EXPECT_EQ(back->endpoints[r].mtu, static_cast<uint32_t>(IBV_MTU_4096));
    EXPECT_EQ(back->endpoints[r].rail, m.endpoints[r].rail);
  }
}

TEST(MoveNotice, RefusesWhatNoDaemonSends) {
  auto decode = [](const std::string& w) {
    return MoveNotice::Decode(reinterpret_cast<const uint8_t*>(w.data()), w.size());
  };
  MoveNotice refusal;
  refusal.to_rc = true;
  refusal.reply = true;
  refusal.refused = true;
  const std::string refused = refusal.Encode();
  ASSERT_TRUE(decode(refused).has_value());
  EXPECT_TRUE(decode(refused)->refused);
  EXPECT_FALSE(decode(std::string("\x01", 1)).has_value()) << "truncated";
  EXPECT_FALSE(decode(std::string("\x01\x00", 2)).has_value()) << "a notice with no endpoint that is no refusal";
  EXPECT_FALSE(decode(std::string("\x05\x00", 2)).has_value()) << "a refusal that is no answer";
  EXPECT_FALSE(decode(std::string("\x08\x00", 2)).has_value()) << "an unknown flag";
  MoveNotice m;
  m.endpoints.push_back(QpEndpoint{});
  m.endpoints.back().rail = "rxe0:1";
  const std::string w = m.Encode();
  EXPECT_TRUE(decode(w).has_value());
  EXPECT_FALSE(decode(w.substr(0, w.size() - 1)).has_value()) << "a rail name cut short";
  EXPECT_FALSE(decode(w + "x").has_value()) << "bytes left over";
  std::string many = w;
  many[1] = static_cast<char>(MoveNotice::kMaxEndpoints + 1);
  EXPECT_FALSE(decode(many).has_value()) << "more endpoints than any node has rails";
}

TEST(EndpointProto, RoundTrips) {
  auto e = EndpointFromProto(Good());
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->lid, 7);
  EXPECT_EQ(e->qpn, 0x123456u);
  EXPECT_EQ(e->psn, 0xabcdefu);
  EXPECT_EQ(e->mtu, static_cast<uint32_t>(IBV_MTU_4096));
  EXPECT_EQ(e->rail, "mlx5_0:1");
  EXPECT_EQ(e->gid[0], 0xfe);
  EXPECT_EQ(e->gid[15], static_cast<uint8_t>(0xfe + 15));
}

TEST(EndpointProto, RefusesWhatNoPortSends) {
  auto bad = Good();
  bad.set_gid("short");
  auto e = EndpointFromProto(bad);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "queue pair endpoint with a GID of 5 bytes");
  bad = Good();
  bad.set_mtu(9);
  EXPECT_EQ(EndpointFromProto(bad).status().message(), "queue pair endpoint with MTU code 9");
  bad = Good();
  bad.set_qpn(0);
  EXPECT_FALSE(EndpointFromProto(bad).ok());
  bad = Good();
  bad.set_psn(1u << 24);
  EXPECT_FALSE(EndpointFromProto(bad).ok());
  bad = Good();
  bad.set_lid(1u << 16);
  EXPECT_FALSE(EndpointFromProto(bad).ok());
}

}  // namespace
}  // namespace ohio
