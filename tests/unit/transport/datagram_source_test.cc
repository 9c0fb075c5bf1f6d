// Which peer sent a datagram (daemon/transport/verbs/ud/datagram_source.h): by the route header's
// source address only when the completion says there is one (IBV_WC_GRH), else by the sending
// queue pair's number and LID, and refused, with a reason, when neither tells a peer of ours.
#include "daemon/transport/verbs/ud/datagram_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <optional>
#include <utility>

namespace ohio {
namespace {

using ::testing::HasSubstr;

constexpr uint32_t kQpn = 0x11;
constexpr PeerId kA = 3;
constexpr PeerId kB = 7;

std::array<uint8_t, 16> Gid(uint8_t last) {
  std::array<uint8_t, 16> g{0xfe, 0x80};
  g[15] = last;
  return g;
}

// An IPv4 address as RoCE v2 maps it into a GID.
std::array<uint8_t, 16> V4Gid(uint8_t last) {
  std::array<uint8_t, 16> g{};
  g[10] = g[11] = 0xff;
  g[12] = 10;
  g[15] = last;
  return g;
}

// The 40 bytes before a datagram as an IPv6 header or GRH from `gid` leaves them.
std::array<uint8_t, 40> GrhFrom(const std::array<uint8_t, 16>& gid) {
  std::array<uint8_t, 40> h{};
  h[0] = 0x60;
  std::memcpy(h.data() + 8, gid.data(), 16);
  return h;
}

// RoCE v2 over IPv4: 20 bytes left as they were, then the IPv4 header (source at 12 of it).
std::array<uint8_t, 40> Ipv4From(const std::array<uint8_t, 16>& gid) {
  std::array<uint8_t, 40> h{};
  h[20] = 0x45;
  std::memcpy(h.data() + 32, gid.data() + 12, 4);
  return h;
}

// Peer A's datagram queue pair at `a` (GID, LID) and, when given, peer B's at `b`, both numbered
// kQpn (a number is the HCA's: two nodes may well use the same).
using Address = std::pair<std::array<uint8_t, 16>, uint16_t>;
DatagramSenders Peers(const Address& a, std::optional<Address> b = std::nullopt) {
  DatagramSenders senders;
  senders.emplace(kQpn, KnownDatagramSender{a.first, a.second, kA});
  if (b) senders.emplace(kQpn, KnownDatagramSender{b->first, b->second, kB});
  return senders;
}

// Refused, saying `why`.
void ExpectRefused(const DatagramSource& s, const char* why) {
  EXPECT_FALSE(s.peer.has_value()) << *s.peer;
  ASSERT_NE(s.refused, nullptr);
  EXPECT_THAT(s.refused, HasSubstr(why));
}

TEST(DatagramSourceTest, ARouteHeaderNamesThePeerByItsSourceGid) {
  const DatagramSenders senders = Peers({Gid(1), 0}, Address{Gid(2), 0});  // the same number on another node
  const auto from_b = GrhFrom(Gid(2));
  const DatagramSource s = IdentifyDatagramSource(senders, {kQpn, 0, true, from_b.data()});
  EXPECT_EQ(s.peer, kB);
  EXPECT_EQ(s.refused, nullptr);

  const auto from_a = GrhFrom(Gid(1));
  EXPECT_EQ(IdentifyDatagramSource(senders, {kQpn, 0, true, from_a.data()}).peer, kA);
}

TEST(DatagramSourceTest, RoceOverIpv4ComparesTheIpv4Source) {
  const DatagramSenders senders = Peers({V4Gid(1), 0}, Address{V4Gid(2), 0});
  const auto from_b = Ipv4From(V4Gid(2));
  EXPECT_EQ(IdentifyDatagramSource(senders, {kQpn, 0, true, from_b.data()}).peer, kB);
}

TEST(DatagramSourceTest, ARouteHeaderFromAnotherAddressIsRefused) {
  const DatagramSenders senders = Peers({Gid(1), 5});
  const auto stranger = GrhFrom(Gid(9));
  // The LID would match: with a header, the header decides.
  ExpectRefused(IdentifyDatagramSource(senders, {kQpn, 5, true, stranger.data()}), "source address");
}

TEST(DatagramSourceTest, AnUnknownQueuePairNumberIsRefused) {
  const DatagramSenders senders = Peers({Gid(1), 5});
  const auto from_a = GrhFrom(Gid(1));
  ExpectRefused(IdentifyDatagramSource(senders, {kQpn + 1, 5, true, from_a.data()}), "queue pair");
}

TEST(DatagramSourceTest, WithoutTheFlagTheHeaderAreaIsNeverRead) {
  const DatagramSenders senders = Peers({Gid(1), 5}, Address{Gid(2), 6});
  // A null header: reading it would crash the test.
  EXPECT_EQ(IdentifyDatagramSource(senders, {kQpn, 6, false, nullptr}).peer, kB);
  EXPECT_EQ(IdentifyDatagramSource(senders, {kQpn, 5, false, nullptr}).peer, kA);
}

TEST(DatagramSourceTest, AStaleHeaderDoesNotNameTheSender) {
  const DatagramSenders senders = Peers({Gid(1), 5}, Address{Gid(2), 6});
  // What A's earlier datagram left in the slot; this one came from B's LID without a header.
  const auto stale = GrhFrom(Gid(1));
  EXPECT_EQ(IdentifyDatagramSource(senders, {kQpn, 6, false, stale.data()}).peer, kB);
  // From a LID that is no peer's with that number: refused, although the stale bytes match A.
  ExpectRefused(IdentifyDatagramSource(senders, {kQpn, 9, false, stale.data()}), "source LID");
}

TEST(DatagramSourceTest, NoHeaderAndNoLidIsRefused) {
  // RoCE: no port has a LID, so a datagram without a header names no sender.
  const DatagramSenders senders = Peers({Gid(1), 0});
  const auto stale = GrhFrom(Gid(1));
  ExpectRefused(IdentifyDatagramSource(senders, {kQpn, 0, false, stale.data()}), "no route header and no source LID");
}

TEST(DatagramSourceTest, TwoPeersBehindOneLidAndNumberAreNotGuessedAt) {
  const DatagramSenders senders = Peers({Gid(1), 5}, Address{Gid(2), 5});
  ExpectRefused(IdentifyDatagramSource(senders, {kQpn, 5, false, nullptr}), "two peers");
}

}  // namespace
}  // namespace ohio
