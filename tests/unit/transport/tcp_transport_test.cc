// Tests of the TCP data transport (daemon/transport/tcp) over loopback: connection set-up by
// the node whose name sorts first, puts into registered regions, sends, queued work, ordering,
// bad puts, peer loss and reconnection, garbage on the data port, a three-node mesh, puts
// written inside Put or finished through the queue, frame counters and peer ids. The test's
// thread drives the transports, as the progress engine would (TransportDriver).
#include "daemon/transport/tcp/tcp_transport.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <linux/tcp.h>  // tcp_info with segment counts (glibc's netinet/tcp.h has an older one)
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "daemon/transport/transport.h"
#include "tests/unit/transport/transport_driver.h"

namespace ohio {
namespace {

using Clock = std::chrono::steady_clock;
using Kind = TransportEvent::Kind;

constexpr auto kDeadline = std::chrono::seconds(10);

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kPutDone:
      return "kPutDone";
    case Kind::kArrived:
      return "kArrived";
    case Kind::kMessage:
      return "kMessage";
    case Kind::kPeerDown:
      return "kPeerDown";
  }
  return "?";
}

std::string Text(const TransportEvent& e) {
  return std::string(reinterpret_cast<const char*>(e.message.data()), e.message_bytes);
}

// A transport driven by the test's TransportDriver, and the events it has not consumed yet.
struct Node {
  TransportDriver* driver = nullptr;
  std::string self;
  std::unique_ptr<TcpTransport> t;
  TransportDriver::Endpoint* ep = nullptr;

  static Node Start(TransportDriver& driver, const std::string& name) {
    Node n;
    n.driver = &driver;
    n.self = name;
    auto r = TcpTransport::Start(name, "127.0.0.1", 0, "127.0.0.1");
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return n;
    n.t = std::move(r).value();
    n.ep = driver.Add(n.t.get());
    return n;
  }

  void Stop() {
    if (ep != nullptr) driver->Remove(ep);
    ep = nullptr;
    t.reset();
  }

  std::deque<TransportEvent>& seen() { return ep->seen; }
  PeerId Id(const std::string& node) const { return t->PeerFor(node); }
  std::string NameOf(PeerId peer) const { return t->PeerName(peer); }

  Status PutBytes(const std::string& to, const void* data, uint64_t bytes, uint64_t key, uint64_t offset, uint32_t imm,
                  uint64_t cookie) {
    const LocalPiece piece{data, bytes};
    return t->Put(Id(to), &piece, 1, key, offset, imm, cookie);
  }
  Status SendText(const std::string& to, const std::string& message) {
    return t->Send(Id(to), message.data(), message.size());
  }

  // The first event (in arrival order) matching `pred`, removed from `seen`; the events before
  // it stay. nullopt when none came before the deadline. Every transport of the driver is
  // driven meanwhile.
  std::optional<TransportEvent> Await(const std::function<bool(const TransportEvent&)>& pred,
                                      Clock::duration timeout = kDeadline) {
    std::optional<TransportEvent> found;
    driver->RunUntil(
        [&] {
          auto it = std::find_if(seen().begin(), seen().end(), pred);
          if (it == seen().end()) return false;
          found = std::move(*it);
          seen().erase(it);
          return true;
        },
        timeout);
    return found;
  }

  std::optional<TransportEvent> AwaitKind(Kind kind, Clock::duration timeout = kDeadline) {
    return Await([kind](const TransportEvent& e) { return e.kind == kind; }, timeout);
  }

  std::string Describe(const TransportEvent& e) const {
    return std::string(KindName(e.kind)) + "{peer=" + NameOf(e.peer) + " imm=" + std::to_string(e.imm) +
           " cookie=" + std::to_string(e.cookie) + " bytes=" + std::to_string(e.bytes) +
           " message_bytes=" + std::to_string(e.message_bytes) + " reason=" + e.reason + "}";
  }

  std::string Pending() {
    std::string s;
    for (const auto& e : seen()) s += Describe(e) + " ";
    return s.empty() ? "(none)" : s;
  }

  bool HasKind(Kind kind) {
    return std::any_of(seen().begin(), seen().end(), [kind](const TransportEvent& e) { return e.kind == kind; });
  }

  size_t Count(Kind kind) {
    return static_cast<size_t>(
        std::count_if(seen().begin(), seen().end(), [kind](const TransportEvent& e) { return e.kind == kind; }));
  }
};

std::vector<uint8_t> Pattern(size_t bytes, uint32_t seed) {
  std::vector<uint8_t> v(bytes);
  std::mt19937 rng(seed);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

bool HasPeer(Node& n, const std::string& peer) {
  auto peers = n.t->connected_peers();
  return std::find(peers.begin(), peers.end(), peer) != peers.end();
}

// Both sides ask for the connection (twice: Connect is idempotent) and wait until each has it.
void ConnectPair(TransportDriver& driver, Node& x, Node& y) {
  ASSERT_TRUE(x.t->Connect(x.Id(y.self), y.t->address()).ok());
  ASSERT_TRUE(y.t->Connect(y.Id(x.self), x.t->address()).ok());
  ASSERT_TRUE(x.t->Connect(x.Id(y.self), y.t->address()).ok());
  ASSERT_TRUE(y.t->Connect(y.Id(x.self), x.t->address()).ok());
  ASSERT_TRUE(driver.RunUntil([&] { return HasPeer(x, y.self) && HasPeer(y, x.self); }, kDeadline))
      << x.self << " peers " << x.t->connections() << ", " << y.self << " peers " << y.t->connections();
}

// One put from `from` to `to` into a fresh region; checks the bytes, kArrived and kPutDone.
void ExpectPutWorks(Node& from, Node& to, uint32_t imm, uint64_t cookie) {
  std::vector<uint8_t> region(8192, 0);
  auto key = to.t->RegisterRegion(region.data(), region.size());
  ASSERT_TRUE(key.ok());
  const std::vector<uint8_t> src = Pattern(4000, imm);
  ASSERT_TRUE(from.PutBytes(to.self, src.data(), src.size(), key.value(), 100, imm, cookie).ok());
  auto arrived = to.AwaitKind(Kind::kArrived);
  ASSERT_TRUE(arrived.has_value()) << "no kArrived at " << to.self << "; seen " << to.Pending();
  EXPECT_EQ(to.NameOf(arrived->peer), from.self);
  EXPECT_EQ(arrived->imm, imm);
  EXPECT_EQ(arrived->bytes, src.size());
  auto done = from.Await([&](const TransportEvent& e) { return e.kind == Kind::kPutDone && e.cookie == cookie; });
  ASSERT_TRUE(done.has_value()) << "no kPutDone at " << from.self << "; seen " << from.Pending();
  EXPECT_EQ(from.NameOf(done->peer), to.self);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), region.begin() + 100));
  EXPECT_TRUE(std::all_of(region.begin(), region.begin() + 100, [](uint8_t b) { return b == 0; }));
  EXPECT_TRUE(std::all_of(region.begin() + 100 + static_cast<std::ptrdiff_t>(src.size()), region.end(),
                          [](uint8_t b) { return b == 0; }));
  to.t->DeregisterRegion(key.value());
}

void ExpectSendWorks(Node& from, Node& to, const std::string& message) {
  ASSERT_TRUE(from.SendText(to.self, message).ok());
  auto m = to.AwaitKind(Kind::kMessage);
  ASSERT_TRUE(m.has_value()) << "no kMessage at " << to.self << "; seen " << to.Pending();
  EXPECT_EQ(to.NameOf(m->peer), from.self);
  EXPECT_EQ(m->message_bytes, message.size());
  EXPECT_TRUE(Text(*m) == message) << "message of " << message.size() << " bytes garbled";
}

// Two transports, "a" (which dials) and "b", connected, driven by the test's thread.
class TcpPair : public ::testing::Test {
 protected:
  void SetUp() override {
    a = Node::Start(driver, "a");
    b = Node::Start(driver, "b");
    ASSERT_TRUE(a.t && b.t);
    ConnectPair(driver, a, b);
  }

  TransportDriver driver;
  Node a;
  Node b;
};

TEST(TcpTransport, StartGivesLoopbackAddressWithPort) {
  TransportDriver driver;
  Node a = Node::Start(driver, "a");
  ASSERT_TRUE(a.t);
  const std::string addr = a.t->address();
  ASSERT_EQ(addr.rfind("127.0.0.1:", 0), 0u) << addr;
  const int port = std::stoi(addr.substr(strlen("127.0.0.1:")));
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
  EXPECT_EQ(a.t->connections(), 0u);
  EXPECT_TRUE(a.t->connected_peers().empty());
  EXPECT_GE(a.t->event_fd(), 0);
}

// 1. A 1 MiB put lands byte for byte; one connection a side; sends each way, empty and the
// largest.
TEST_F(TcpPair, PairPutAndSend) {

  constexpr uint64_t kBytes = 1 << 20;
  constexpr uint64_t kOffset = 12345;
  std::vector<uint8_t> region(kBytes + 2 * kOffset, 0xEE);
  auto key = b.t->RegisterRegion(region.data(), region.size());
  ASSERT_TRUE(key.ok()) << key.status().message();
  const std::vector<uint8_t> src = Pattern(kBytes, 7);
  ASSERT_TRUE(a.PutBytes("b", src.data(), kBytes, key.value(), kOffset, 0xDEADBEEF, 0x123456789ABCull).ok());

  auto arrived = b.AwaitKind(Kind::kArrived);
  ASSERT_TRUE(arrived.has_value()) << "seen at b: " << b.Pending();
  EXPECT_EQ(b.NameOf(arrived->peer), "a");
  EXPECT_EQ(arrived->imm, 0xDEADBEEFu);
  EXPECT_EQ(arrived->bytes, kBytes);
  auto done = a.AwaitKind(Kind::kPutDone);
  ASSERT_TRUE(done.has_value()) << "seen at a: " << a.Pending();
  EXPECT_EQ(done->cookie, 0x123456789ABCull);
  EXPECT_EQ(a.NameOf(done->peer), "b");

  EXPECT_EQ(std::memcmp(region.data() + kOffset, src.data(), kBytes), 0);
  EXPECT_TRUE(std::all_of(region.begin(), region.begin() + kOffset, [](uint8_t x) { return x == 0xEE; }));
  EXPECT_TRUE(std::all_of(region.begin() + kOffset + kBytes, region.end(), [](uint8_t x) { return x == 0xEE; }));

  EXPECT_EQ(a.t->connections(), 1u);
  EXPECT_EQ(b.t->connections(), 1u);
  EXPECT_EQ(a.t->connected_peers(), std::vector<std::string>{"b"});
  EXPECT_EQ(b.t->connected_peers(), std::vector<std::string>{"a"});

  ExpectSendWorks(a, b, "credit 42 from a");
  ExpectSendWorks(b, a, "round 7 from b");
  ExpectSendWorks(a, b, "");
  ExpectSendWorks(b, a, "");
  std::string binary(kMaxTransportMessage, '\0');
  const std::vector<uint8_t> noise = Pattern(binary.size(), 99);
  std::memcpy(binary.data(), noise.data(), binary.size());
  binary[0] = '\0';
  binary[binary.size() - 1] = '\0';
  ExpectSendWorks(a, b, binary);
  ExpectSendWorks(b, a, binary);

  EXPECT_EQ(a.t->connections(), 1u);
  EXPECT_EQ(b.t->connections(), 1u);
  EXPECT_FALSE(a.HasKind(Kind::kPeerDown)) << a.Pending();
  EXPECT_FALSE(b.HasKind(Kind::kPeerDown)) << b.Pending();
}

TEST(TcpTransport, SendOverLimitIsRefused) {
  TransportDriver driver;
  Node a = Node::Start(driver, "a");
  ASSERT_TRUE(a.t);
  EXPECT_FALSE(a.SendText("b", std::string(kMaxTransportMessage + 1, 'x')).ok());
}

// 2. The non-dialer (b) puts and sends before any connection exists; so does the dialer (a)
// before its Connect. Everything is delivered, in order, once a connects.
TEST(TcpTransport, WorkQueuedBeforeConnectionIsFlushed) {
  TransportDriver driver;
  Node a = Node::Start(driver, "a");
  Node b = Node::Start(driver, "b");
  ASSERT_TRUE(a.t && b.t);

  std::vector<uint8_t> region_a(3 * 4096, 0);
  std::vector<uint8_t> region_b(3 * 4096, 0);
  auto key_a = a.t->RegisterRegion(region_a.data(), region_a.size());
  auto key_b = b.t->RegisterRegion(region_b.data(), region_b.size());
  ASSERT_TRUE(key_a.ok() && key_b.ok());
  const std::vector<uint8_t> from_b = Pattern(3 * 4096, 1);
  const std::vector<uint8_t> from_a = Pattern(3 * 4096, 2);

  // b first, before anybody called Connect.
  for (uint32_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(b.PutBytes("a", from_b.data() + i * 4096, 4096, key_a.value(), i * 4096, 100 + i, 200 + i).ok());
  }
  ASSERT_TRUE(b.SendText("a", "queued at b").ok());
  // b's Connect does not dial (b sorts after a); still nothing may be lost.
  ASSERT_TRUE(b.t->Connect(b.Id("a"), a.t->address()).ok());
  // a queues too, before it connects.
  for (uint32_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(a.PutBytes("b", from_a.data() + i * 4096, 4096, key_b.value(), i * 4096, 300 + i, 400 + i).ok());
  }
  ASSERT_TRUE(a.SendText("b", "queued at a").ok());
  ASSERT_TRUE(a.t->Connect(a.Id("b"), b.t->address()).ok());

  for (uint32_t i = 0; i < 3; ++i) {
    auto at_a = a.AwaitKind(Kind::kArrived);
    ASSERT_TRUE(at_a.has_value()) << "put " << i << " from b; seen at a: " << a.Pending();
    EXPECT_EQ(at_a->imm, 100 + i);
    EXPECT_EQ(a.NameOf(at_a->peer), "b");
    EXPECT_EQ(at_a->bytes, 4096u);
    auto at_b = b.AwaitKind(Kind::kArrived);
    ASSERT_TRUE(at_b.has_value()) << "put " << i << " from a; seen at b: " << b.Pending();
    EXPECT_EQ(at_b->imm, 300 + i);
    EXPECT_EQ(b.NameOf(at_b->peer), "a");
  }
  for (uint32_t i = 0; i < 3; ++i) {
    auto done_b = b.AwaitKind(Kind::kPutDone);
    ASSERT_TRUE(done_b.has_value()) << b.Pending();
    EXPECT_EQ(done_b->cookie, 200 + i);
    auto done_a = a.AwaitKind(Kind::kPutDone);
    ASSERT_TRUE(done_a.has_value()) << a.Pending();
    EXPECT_EQ(done_a->cookie, 400 + i);
  }
  auto msg_a = a.AwaitKind(Kind::kMessage);
  ASSERT_TRUE(msg_a.has_value()) << a.Pending();
  EXPECT_EQ(Text(*msg_a), "queued at b");
  auto msg_b = b.AwaitKind(Kind::kMessage);
  ASSERT_TRUE(msg_b.has_value()) << b.Pending();
  EXPECT_EQ(Text(*msg_b), "queued at a");

  EXPECT_EQ(region_a, from_b);
  EXPECT_EQ(region_b, from_a);
  EXPECT_EQ(a.t->connections(), 1u);
  EXPECT_EQ(b.t->connections(), 1u);
  EXPECT_FALSE(a.HasKind(Kind::kPeerDown)) << a.Pending();
  EXPECT_FALSE(b.HasKind(Kind::kPeerDown)) << b.Pending();
}

// 3. 1000 puts of 4 KiB: kArrived in issue order with their imms, kPutDone in order with
// their cookies, and every byte in place.
TEST_F(TcpPair, ManyPutsArriveInOrder) {

  constexpr uint32_t kPuts = 1000;
  constexpr uint64_t kChunk = 4096;
  std::vector<uint8_t> region(kPuts * kChunk, 0);
  auto key = b.t->RegisterRegion(region.data(), region.size());
  ASSERT_TRUE(key.ok());
  const std::vector<uint8_t> src = Pattern(kPuts * kChunk, 3);
  for (uint32_t i = 0; i < kPuts; ++i) {
    // Alternate the destination order so the data check also catches misplaced offsets.
    const uint64_t slot = (i % 2 == 0) ? i : kPuts - i;
    ASSERT_TRUE(a.PutBytes("b", src.data() + slot * kChunk, kChunk, key.value(), slot * kChunk, 0x10000 + i, 5000 + i)
                    .ok());
  }
  for (uint32_t i = 0; i < kPuts; ++i) {
    auto e = b.AwaitKind(Kind::kArrived);
    ASSERT_TRUE(e.has_value()) << "only " << i << " of " << kPuts << " arrived";
    ASSERT_EQ(e->imm, 0x10000 + i) << "arrival " << i;
    ASSERT_EQ(e->bytes, kChunk);
  }
  for (uint32_t i = 0; i < kPuts; ++i) {
    auto e = a.AwaitKind(Kind::kPutDone);
    ASSERT_TRUE(e.has_value()) << "only " << i << " of " << kPuts << " completed";
    ASSERT_EQ(e->cookie, 5000u + i) << "completion " << i;
  }
  EXPECT_TRUE(region == src);
  EXPECT_EQ(a.t->connections(), 1u);
  EXPECT_EQ(b.t->connections(), 1u);
}

// 4. Puts naming an unknown key, a deregistered region, a parked region (ParkRegion), the old
// key of a region reused under a new one (ReuseRegion), or bytes beyond the region's end are
// dropped: no kArrived, no write outside registered memory, and the connection lives on.
TEST_F(TcpPair, BadPutsAreDroppedAndConnectionSurvives) {

  constexpr uint64_t kRegion = 64 * 1024;
  std::vector<uint8_t> live(kRegion, 0);
  std::vector<uint8_t> gone(kRegion, 0);
  auto live_key = b.t->RegisterRegion(live.data(), live.size());
  auto gone_key = b.t->RegisterRegion(gone.data(), gone.size());
  ASSERT_TRUE(live_key.ok() && gone_key.ok());
  b.t->DeregisterRegion(gone_key.value());
  std::vector<uint8_t> parked(kRegion, 0);
  std::vector<uint8_t> reused(kRegion, 0);
  auto parked_key = b.t->RegisterRegion(parked.data(), parked.size());
  auto old_key = b.t->RegisterRegion(reused.data(), reused.size());
  ASSERT_TRUE(parked_key.ok() && old_key.ok());
  ASSERT_TRUE(b.t->ParkRegion(parked_key.value()));
  ASSERT_TRUE(b.t->ParkRegion(old_key.value()));
  const std::optional<uint64_t> new_key = b.t->ReuseRegion(old_key.value());
  ASSERT_TRUE(new_key.has_value());
  EXPECT_NE(*new_key, old_key.value());
  EXPECT_FALSE(b.t->ReuseRegion(old_key.value()).has_value()) << "a key reused twice";
  const TransportStats stats = b.t->stats();
  EXPECT_EQ(stats.registrations, 4u);
  EXPECT_EQ(stats.deregistrations, 1u);
  EXPECT_EQ(stats.registered_bytes, 3 * kRegion);
  const uint64_t never = *new_key + 1000;

  const std::vector<uint8_t> src = Pattern(2 * kRegion, 4);
  struct Bad {
    const char* what;
    uint64_t key, offset, bytes;
  };
  const std::vector<Bad> bad = {
      {"never registered key", never, 0, 4096},
      {"deregistered region", gone_key.value(), 0, 4096},
      {"parked region", parked_key.value(), 0, 4096},
      {"old key of a reused region", old_key.value(), 0, 4096},
      {"offset+bytes past the end", live_key.value(), kRegion - 100, 4096},
      {"offset past the end", live_key.value(), kRegion + 1, 16},
      {"bytes larger than the region", live_key.value(), 0, 2 * kRegion},
      {"offset+bytes overflowing 64 bits", live_key.value(), ~uint64_t{0} - 10, 4096},
  };
  for (uint32_t i = 0; i < bad.size(); ++i) {
    const Bad& p = bad[i];
    ASSERT_TRUE(a.PutBytes("b", src.data(), p.bytes, p.key, p.offset, i + 1, 900 + i).ok()) << p.what;
  }
  const uint32_t good_imm = 777;
  ASSERT_TRUE(a.PutBytes("b", src.data(), 4096, live_key.value(), 8192, good_imm, 1).ok());

  // Frames on one connection are handled in order, so by the time the good put has arrived
  // every bad one has been processed: the first kArrived must be the good one.
  auto first = b.AwaitKind(Kind::kArrived);
  ASSERT_TRUE(first.has_value()) << "the valid put after the bad ones never arrived; seen at b: " << b.Pending();
  EXPECT_EQ(first->imm, good_imm) << "a dropped put was reported as arrived (imm " << first->imm << ": "
                                  << (first->imm >= 1 && first->imm <= bad.size() ? bad[first->imm - 1].what : "?")
                                  << ")";
  if (first->imm != good_imm) {
    auto good = b.Await([&](const TransportEvent& e) { return e.kind == Kind::kArrived && e.imm == good_imm; });
    EXPECT_TRUE(good.has_value()) << "the valid put never arrived; seen at b: " << b.Pending();
    for (const auto& e : b.seen()) {
      if (e.kind == Kind::kArrived) ADD_FAILURE() << "spurious " << b.Describe(e);
    }
    // Keep the checks below about the connection, not about these leftovers.
    b.seen().erase(std::remove_if(b.seen().begin(), b.seen().end(),
                                [](const TransportEvent& e) { return e.kind == Kind::kArrived; }),
                 b.seen().end());
  }
  EXPECT_EQ(std::memcmp(live.data() + 8192, src.data(), 4096), 0);
  EXPECT_TRUE(std::all_of(live.begin(), live.begin() + 8192, [](uint8_t x) { return x == 0; }));
  EXPECT_TRUE(std::all_of(live.begin() + 8192 + 4096, live.end(), [](uint8_t x) { return x == 0; }));
  EXPECT_TRUE(std::all_of(gone.begin(), gone.end(), [](uint8_t x) { return x == 0; }));
  EXPECT_TRUE(std::all_of(parked.begin(), parked.end(), [](uint8_t x) { return x == 0; }));
  EXPECT_TRUE(std::all_of(reused.begin(), reused.end(), [](uint8_t x) { return x == 0; }));
  // The reused region takes puts under its new key.
  ASSERT_TRUE(a.PutBytes("b", src.data(), 4096, *new_key, 0, 779, 3).ok());
  EXPECT_TRUE(b.Await([](const TransportEvent& e) { return e.kind == Kind::kArrived && e.imm == 779; }).has_value())
      << b.Pending();
  EXPECT_EQ(std::memcmp(reused.data(), src.data(), 4096), 0);

  EXPECT_EQ(a.t->connections(), 1u);
  EXPECT_EQ(b.t->connections(), 1u);
  EXPECT_FALSE(a.HasKind(Kind::kPeerDown)) << a.Pending();
  EXPECT_FALSE(b.HasKind(Kind::kPeerDown)) << b.Pending();
  ExpectSendWorks(a, b, "still here");
  ExpectPutWorks(a, b, 778, 2);
}

// 5. Losing a peer: the survivor sees kPeerDown and no connection; a new transport with the
// same name connects again and puts work both ways. Once for each side of the pair.
void LosePeerAndReconnect(bool lose_dialer) {
  TransportDriver driver;
  Node a = Node::Start(driver, "a");
  Node b = Node::Start(driver, "b");
  ASSERT_TRUE(a.t && b.t);
  ConnectPair(driver, a, b);
  ExpectPutWorks(a, b, 1, 1);

  Node& lost = lose_dialer ? a : b;
  Node& survivor = lose_dialer ? b : a;
  lost.Stop();
  auto down = survivor.AwaitKind(Kind::kPeerDown);
  ASSERT_TRUE(down.has_value()) << "no kPeerDown at " << survivor.self << "; seen " << survivor.Pending();
  EXPECT_EQ(survivor.NameOf(down->peer), lost.self);
  EXPECT_FALSE(down->reason.empty()) << "kPeerDown carries no reason";
  EXPECT_FALSE(down->never_up) << "a connection that was up is lost, not one that never came up: " << down->reason;
  EXPECT_EQ(survivor.t->connections(), 0u);
  EXPECT_TRUE(survivor.t->connected_peers().empty());

  lost = Node::Start(driver, lost.self);
  ASSERT_TRUE(lost.t);
  ConnectPair(driver, a, b);
  EXPECT_EQ(a.t->connections(), 1u);
  EXPECT_EQ(b.t->connections(), 1u);
  ExpectPutWorks(a, b, 2, 2);
  ExpectPutWorks(b, a, 3, 3);
  ExpectSendWorks(a, b, "after reconnect");
  EXPECT_FALSE(survivor.HasKind(Kind::kPeerDown)) << survivor.Pending();
}

TEST(TcpTransport, DialerLostThenReconnects) { LosePeerAndReconnect(/*lose_dialer=*/true); }
TEST(TcpTransport, AcceptorLostThenReconnects) { LosePeerAndReconnect(/*lose_dialer=*/false); }

// A raw TCP client on a transport's data port.
class RawClient {
 public:
  explicit RawClient(const std::string& address) {
    const auto colon = address.rfind(':');
    struct sockaddr_in sa = {};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
    inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr);
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ >= 0 && connect(fd_, reinterpret_cast<struct sockaddr*>(&sa), sizeof(sa)) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~RawClient() {
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return fd_ >= 0; }

  bool SendAll(const void* data, size_t bytes) {
    const char* p = static_cast<const char*>(data);
    while (bytes > 0) {
      ssize_t w = send(fd_, p, bytes, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      p += w;
      bytes -= static_cast<size_t>(w);
    }
    return true;
  }

  // True once the other side closed the connection (EOF or reset) before the deadline; the
  // transports are driven meanwhile.
  bool WaitClosed(TransportDriver& driver, Clock::duration timeout = kDeadline) {
    return driver.RunUntil(
        [this] {
          char buf[4096];
          const ssize_t r = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
          return r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR);  // EOF, ECONNRESET and the like
        },
        timeout);
  }

 private:
  int fd_ = -1;
};

std::string Header(uint32_t type_word, uint32_t imm, uint64_t key, uint64_t offset, uint64_t bytes) {
  std::string h(32, '\0');
  auto put = [&h](size_t at, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) h[at + i] = static_cast<char>(v >> (8 * i));
  };
  put(0, type_word, 4);
  put(4, imm, 4);
  put(8, key, 8);
  put(16, offset, 8);
  put(24, bytes, 8);
  return h;
}

// 6. Strangers on the data port are disconnected; the real peer keeps working.
TEST_F(TcpPair, GarbageOnDataPortIsDisconnected) {

  std::vector<uint8_t> region(64 * 1024, 0);
  auto key = b.t->RegisterRegion(region.data(), region.size());
  ASSERT_TRUE(key.ok());
  constexpr uint32_t kMagic = 0x4f480000;

  struct Case {
    const char* what;
    std::string bytes;
  };
  std::vector<uint8_t> noise = Pattern(4096, 5);
  noise[2] = 0x00;  // the type word's high half is not the magic
  noise[3] = 0x00;
  const std::vector<Case> cases = {
      {"random bytes", std::string(noise.begin(), noise.end())},
      {"HTTP request", std::string("GET / HTTP/1.1\r\nHost: x\r\n\r\n") + std::string(32, '\n')},
      {"put before hello", Header(kMagic | 2, 1, key.value(), 0, 16) + std::string(16, 'X')},
      {"message before hello", Header(kMagic | 3, 0, 0, 0, 5) + "hello"},
      {"unknown frame type", Header(kMagic | 9, 0, 0, 0, 0)},
      {"wrong magic", Header(0x12340000 | 1, 0, 0, 0, 1) + "z"},
      {"oversized hello", Header(kMagic | 1, 0, 0, 0, 100000) + std::string(1000, 'n')},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    RawClient raw(b.t->address());
    ASSERT_TRUE(raw.ok());
    ASSERT_TRUE(raw.SendAll(c.bytes.data(), c.bytes.size()));
    EXPECT_TRUE(raw.WaitClosed(driver)) << "b did not disconnect a client sending " << c.what;
  }
  EXPECT_TRUE(std::all_of(region.begin(), region.end(), [](uint8_t x) { return x == 0; }))
      << "a stranger's put landed in a region";

  EXPECT_EQ(b.t->connections(), 1u);
  EXPECT_EQ(b.t->connected_peers(), std::vector<std::string>{"a"});
  b.t->DeregisterRegion(key.value());
  ExpectPutWorks(a, b, 11, 11);
  ExpectPutWorks(b, a, 12, 12);
  ExpectSendWorks(a, b, "after the garbage");
  EXPECT_FALSE(b.HasKind(Kind::kPeerDown)) << b.Pending();
  EXPECT_FALSE(b.HasKind(Kind::kMessage)) << b.Pending();
  EXPECT_FALSE(b.HasKind(Kind::kArrived)) << b.Pending();
  EXPECT_EQ(b.t->connections(), 1u);
}

// A hello naming nobody is malformed too: the stranger must not become a peer called "".
TEST_F(TcpPair, HelloWithEmptyNameIsRejected) {
  RawClient raw(b.t->address());
  ASSERT_TRUE(raw.ok());
  const std::string hello = Header(0x4f480000 | 1, 0, 0, 0, 0);
  ASSERT_TRUE(raw.SendAll(hello.data(), hello.size()));
  const bool closed = raw.WaitClosed(driver, std::chrono::seconds(2));
  auto peers = b.t->connected_peers();
  std::string listed;
  for (const auto& p : peers) listed += "'" + p + "' ";
  EXPECT_TRUE(closed) << "b kept a client whose hello names nobody; b's peers now: " << listed;
  EXPECT_EQ(b.t->connections(), 1u) << "peers: " << listed;
  EXPECT_EQ(peers, std::vector<std::string>{"a"});
  ExpectSendWorks(a, b, "still fine");
}

// 7. Three nodes, every pair connected once; traffic reaches the right peer.
TEST(TcpTransport, ThreeNodesFullyConnected) {
  TransportDriver driver;
  std::vector<Node> nodes;
  for (const char* name : {"a", "b", "c"}) nodes.push_back(Node::Start(driver, name));
  for (auto& n : nodes) ASSERT_TRUE(n.t);
  for (auto& x : nodes) {
    for (auto& y : nodes) {
      if (&x != &y) {
        ASSERT_TRUE(x.t->Connect(x.Id(y.self), y.t->address()).ok());
      }
    }
  }
  ASSERT_TRUE(driver.RunUntil(
      [&] { return std::all_of(nodes.begin(), nodes.end(), [](const Node& n) { return n.t->connections() == 2; }); },
      kDeadline))
      << "connections: " << nodes[0].t->connections() << " " << nodes[1].t->connections() << " "
      << nodes[2].t->connections();
  for (auto& n : nodes) {
    std::vector<std::string> want;
    for (auto& o : nodes) {
      if (&o != &n) want.push_back(o.self);
    }
    auto got = n.t->connected_peers();
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want) << "at " << n.self;
  }
  uint32_t imm = 1;
  for (auto& x : nodes) {
    for (auto& y : nodes) {
      if (&x == &y) continue;
      SCOPED_TRACE(x.self + " -> " + y.self);
      ExpectSendWorks(x, y, "from " + x.self + " to " + y.self);
      ExpectPutWorks(x, y, imm, imm);
      ++imm;
    }
  }
  for (auto& n : nodes) {
    EXPECT_EQ(n.t->connections(), 2u) << "at " << n.self;
    EXPECT_FALSE(n.HasKind(Kind::kPeerDown)) << n.self << ": " << n.Pending();
  }
}

// A put to a connection with nothing queued is written inside Put, from the caller's pieces:
// it lands while the sender is not polled at all, byte for byte, and its kPutDone comes with
// the sender's next Poll (which the sender must not sleep through).
TEST_F(TcpPair, PutIsWrittenInsidePutWhenNothingIsQueued) {
  std::vector<uint8_t> region(8192, 0);
  auto key = b.t->RegisterRegion(region.data(), region.size());
  ASSERT_TRUE(key.ok());
  const std::vector<uint8_t> src = Pattern(3000, 21);
  const LocalPiece pieces[] = {{src.data(), 1000}, {src.data() + 1000, 1}, {src.data() + 1001, 1999}};

  driver.Pause(a.ep);
  ASSERT_TRUE(a.t->Put(a.Id("b"), pieces, 3, key.value(), 50, 77, 78).ok());
  EXPECT_EQ(a.t->stats().data_frames_sent, 1u) << "the put was not written inside Put";
  auto arrived = b.AwaitKind(Kind::kArrived);
  ASSERT_TRUE(arrived.has_value()) << "seen at b: " << b.Pending();
  EXPECT_EQ(arrived->imm, 77u);
  EXPECT_EQ(arrived->bytes, src.size());
  EXPECT_TRUE(std::equal(src.begin(), src.end(), region.begin() + 50));
  EXPECT_TRUE(std::all_of(region.begin(), region.begin() + 50, [](uint8_t x) { return x == 0; }));
  EXPECT_TRUE(std::all_of(region.begin() + 3050, region.end(), [](uint8_t x) { return x == 0; }));
  EXPECT_FALSE(a.t->PrepareToSleep()) << "a put done inside Put must keep the engine awake until it is reported";

  driver.Resume(a.ep);
  auto done = a.AwaitKind(Kind::kPutDone);
  ASSERT_TRUE(done.has_value()) << "seen at a: " << a.Pending();
  EXPECT_EQ(done->cookie, 78u);
  EXPECT_EQ(done->bytes, src.size());
  EXPECT_TRUE(a.t->PrepareToSleep());
}

// A put larger than the socket takes at once (64 MiB to a peer that reads nothing for a while,
// its engine busy elsewhere) is finished from Poll as the socket drains: it arrives whole, a
// message sent after it arrives after it, and its kPutDone comes exactly once.
TEST_F(TcpPair, LargePutCompletesThroughTheQueue) {
  constexpr uint64_t kBytes = 64ull << 20;
  constexpr auto kLong = std::chrono::seconds(60);
  std::vector<uint8_t> region(kBytes, 0);
  auto key = b.t->RegisterRegion(region.data(), region.size());
  ASSERT_TRUE(key.ok());
  const std::vector<uint8_t> src = Pattern(kBytes, 31);

  driver.Pause(b.ep);
  ASSERT_TRUE(a.PutBytes("b", src.data(), kBytes, key.value(), 0, 5, 6).ok());
  ASSERT_TRUE(a.SendText("b", "after the put").ok());
  driver.RunFor(std::chrono::milliseconds(200));
  EXPECT_FALSE(a.HasKind(Kind::kPutDone)) << "64 MiB cannot have left while b read nothing";
  EXPECT_EQ(a.t->stats().data_frames_sent, 0u);

  driver.Resume(b.ep);
  auto arrived = b.AwaitKind(Kind::kArrived, kLong);
  ASSERT_TRUE(arrived.has_value()) << "seen at b: " << b.Pending();
  EXPECT_EQ(arrived->bytes, kBytes);
  auto message = b.AwaitKind(Kind::kMessage);
  ASSERT_TRUE(message.has_value()) << "seen at b: " << b.Pending();
  EXPECT_EQ(Text(*message), "after the put");
  auto done = a.AwaitKind(Kind::kPutDone, kLong);
  ASSERT_TRUE(done.has_value()) << "seen at a: " << a.Pending();
  EXPECT_EQ(done->cookie, 6u);
  EXPECT_EQ(done->bytes, kBytes);
  driver.RunFor(std::chrono::milliseconds(100));
  EXPECT_EQ(a.Count(Kind::kPutDone), 0u) << "a second kPutDone: " << a.Pending();
  EXPECT_TRUE(region == src);
  EXPECT_EQ(a.t->stats().data_frames_sent, 1u);
  EXPECT_EQ(b.t->stats().data_frames_received, 1u);
}

// Frames are counted where they leave and where they land: one data frame per put however
// many pieces it gathers (or none), one control frame per Send; the hellos are not counted.
TEST_F(TcpPair, FrameCountersCountPutsAndSendsNotHellos) {
  for (Node* n : {&a, &b}) {
    const TransportStats s = n->t->stats();
    EXPECT_EQ(s.data_frames_sent + s.data_frames_received + s.control_frames_sent + s.control_frames_received, 0u)
        << n->self << " counted the hellos";
  }
  std::vector<uint8_t> region(64 * 1024, 0);
  auto key = b.t->RegisterRegion(region.data(), region.size());
  ASSERT_TRUE(key.ok());
  const std::vector<uint8_t> src = Pattern(16 * 1024, 41);
  const LocalPiece four[] = {{src.data(), 10}, {src.data() + 10, 4000}, {src.data() + 4010, 6}, {src.data() + 8192, 8192}};
  ASSERT_TRUE(a.PutBytes("b", src.data(), 4096, key.value(), 0, 1, 1).ok());
  ASSERT_TRUE(a.t->Put(a.Id("b"), four, 4, key.value(), 8192, 2, 2).ok());
  ASSERT_TRUE(a.t->Put(a.Id("b"), nullptr, 0, key.value(), 0, 3, 3).ok());
  ASSERT_TRUE(a.SendText("b", "one").ok());
  ASSERT_TRUE(a.SendText("b", "two").ok());
  ASSERT_TRUE(b.SendText("a", "three").ok());
  ASSERT_TRUE(driver.RunUntil(
      [&] { return b.Count(Kind::kArrived) == 3 && b.Count(Kind::kMessage) == 2 && a.Count(Kind::kMessage) == 1 &&
                   a.Count(Kind::kPutDone) == 3; },
      kDeadline))
      << "seen at a: " << a.Pending() << "\nseen at b: " << b.Pending();
  const TransportStats sa = a.t->stats();
  const TransportStats sb = b.t->stats();
  EXPECT_EQ(sa.data_frames_sent, 3u);
  EXPECT_EQ(sa.data_frames_received, 0u);
  EXPECT_EQ(sa.control_frames_sent, 2u);
  EXPECT_EQ(sa.control_frames_received, 1u);
  EXPECT_EQ(sb.data_frames_sent, 0u);
  EXPECT_EQ(sb.data_frames_received, 3u);
  EXPECT_EQ(sb.control_frames_sent, 1u);
  EXPECT_EQ(sb.control_frames_received, 2u);
}

// Packets without data (acknowledgements, window updates) that this process's established TCP
// connections have sent so far, as the kernel counts them (TCP_INFO).
uint64_t PacketsWithoutDataSent() {
  uint64_t n = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  while (dirent* e = readdir(dir)) {
    const int fd = atoi(e->d_name);
    if (fd <= 2 || fd == dirfd(dir)) continue;
    tcp_info info{};
    socklen_t len = sizeof(info);
    constexpr uint8_t kEstablished = 1;  // the kernel's TCP_ESTABLISHED
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 || info.tcpi_state != kEstablished) continue;
    n += info.tcpi_segs_out - info.tcpi_data_segs_out;
  }
  closedir(dir);
  return n;
}

// Small frames one way, each read before the next is written (a Bruck step's pattern): the
// receiver's acknowledgements wait to be combined instead of taking a packet per frame. TCP
// still acknowledges every second small frame by itself, so about half as many as frames;
// quick acknowledgements gave one per frame.
TEST_F(TcpPair, SmallFramesOneWayAreNotEachAcknowledgedByAPacket) {
  constexpr int kFrames = 200;
  std::vector<uint8_t> region(64, 0);
  auto key = b.t->RegisterRegion(region.data(), region.size());
  ASSERT_TRUE(key.ok());
  const std::vector<uint8_t> src = Pattern(16, 5);
  // Settle what the connection set-up left to acknowledge.
  driver.RunFor(std::chrono::milliseconds(50));
  const uint64_t before = PacketsWithoutDataSent();
  for (int i = 0; i < kFrames; ++i) {
    ASSERT_TRUE(a.PutBytes("b", src.data(), src.size(), key.value(), 0, static_cast<uint32_t>(i), i).ok());
    ASSERT_TRUE(driver.RunUntil([&] { return b.Count(Kind::kArrived) == static_cast<size_t>(i + 1); }, kDeadline))
        << "frame " << i << " did not arrive; seen at b: " << b.Pending();
  }
  const uint64_t without_data = PacketsWithoutDataSent() - before;
  EXPECT_LE(without_data, kFrames * 7 / 10) << "packets without data for " << kFrames << " one-way frames";
  EXPECT_EQ(std::memcmp(region.data(), src.data(), src.size()), 0);
}

// A node's id does not change and no two names share one, whether the name came from the
// caller or from a peer's hello.
TEST(TcpTransport, PeerForIsStableAndDistinctPerName) {
  TransportDriver driver;
  Node b = Node::Start(driver, "b");
  Node first = Node::Start(driver, "0");  // sorts before "b": it dials, b learns it from the hello
  ASSERT_TRUE(b.t && first.t);
  const PeerId x = b.t->PeerFor("x");
  const PeerId y = b.t->PeerFor("y");
  EXPECT_NE(x, y);
  EXPECT_EQ(b.t->PeerFor("x"), x);
  EXPECT_EQ(b.t->PeerName(x), "x");
  EXPECT_EQ(b.t->PeerName(y), "y");

  ASSERT_TRUE(first.t->Connect(first.Id("b"), b.t->address()).ok());
  ASSERT_TRUE(driver.RunUntil([&] { return HasPeer(b, "0"); }, kDeadline));
  ASSERT_TRUE(first.SendText("b", "hi").ok());
  auto m = b.AwaitKind(Kind::kMessage);
  ASSERT_TRUE(m.has_value()) << "seen at b: " << b.Pending();
  EXPECT_EQ(m->peer, b.t->PeerFor("0"));
  EXPECT_NE(m->peer, x);
  EXPECT_NE(m->peer, y);
  EXPECT_EQ(b.t->PeerFor("x"), x);
  EXPECT_EQ(b.t->PeerName(m->peer), "0");
}

// Frames reach the reader cut anywhere and packed several to a read (it reads ahead of the frame
// it needs: daemon/transport/tcp/tcp_transport.h): a stream of puts of 0 B to 20 KiB (some smaller
// than the read-ahead buffer, some the size of it, some larger) and messages, written in
// pieces of 1 B to 9 KiB with the receiver polled between them. Every put lands byte for byte,
// every kArrived and message comes once, in order, and the connection lives on.
TEST(TcpTransport, FramesCutAnywhereAndPackedTogetherArriveWhole) {
  TransportDriver driver;
  Node b = Node::Start(driver, "b");
  ASSERT_TRUE(b.t);
  constexpr uint64_t kRegion = 256 * 1024;
  std::vector<uint8_t> region(kRegion, 0);
  auto key = b.t->RegisterRegion(region.data(), region.size());
  ASSERT_TRUE(key.ok());
  RawClient raw(b.t->address());
  ASSERT_TRUE(raw.ok());
  constexpr uint32_t kMagic = 0x4f480000;
  std::string stream = Header(kMagic | 1, 0, 0, 0, 1) + "z";
  const std::vector<uint64_t> sizes = {0, 1, 31, 32, 33, 4063, 4064, 4095, 4096, 4097, 8192, 20000, 7, 2048, 2049};
  std::vector<uint8_t> expected(kRegion, 0);
  uint64_t offset = 0;
  uint32_t imm = 1;
  std::vector<std::string> messages;
  for (int pass = 0; pass < 3; ++pass) {
    for (uint64_t bytes : sizes) {
      const std::vector<uint8_t> payload = Pattern(bytes, imm);
      stream += Header(kMagic | 2, imm, key.value(), offset, bytes);
      stream.append(payload.begin(), payload.end());
      std::copy(payload.begin(), payload.end(), expected.begin() + static_cast<long>(offset));
      offset += bytes;
      ++imm;
      if (bytes % 2 == 1) {
        const std::string text = "message after put " + std::to_string(imm - 1);
        messages.push_back(text);
        stream += Header(kMagic | 3, 0, 0, 0, text.size()) + text;
      }
    }
  }
  ASSERT_LE(offset, kRegion);
  std::mt19937 rng(12);
  const std::vector<size_t> cuts = {1, 5, 31, 32, 33, 100, 4095, 4096, 4097, 9000};
  for (size_t at = 0; at < stream.size();) {
    const size_t n = std::min(cuts[rng() % cuts.size()], stream.size() - at);
    ASSERT_TRUE(raw.SendAll(stream.data() + at, n));
    at += n;
    driver.RunUntil([] { return false; }, std::chrono::milliseconds(rng() % 3));
  }
  for (uint32_t want = 1; want < imm; ++want) {
    auto arrived = b.Await([](const TransportEvent& e) { return e.kind == Kind::kArrived; });
    ASSERT_TRUE(arrived.has_value()) << "put " << want << " did not arrive; seen: " << b.Pending();
    EXPECT_EQ(arrived->imm, want);
  }
  for (const std::string& text : messages) {
    auto m = b.AwaitKind(Kind::kMessage);
    ASSERT_TRUE(m.has_value()) << "missing: " << text;
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(m->message.data()), m->message_bytes), text);
  }
  EXPECT_TRUE(region == expected) << "a put's bytes did not land where they belong";
  EXPECT_FALSE(b.HasKind(Kind::kPeerDown)) << b.Pending();
  EXPECT_EQ(b.t->connections(), 1u);
}

// Garbage from a peer that has said hello closes its connection as a protocol error, which
// the engine hears as kPeerDown for that peer.
TEST(TcpTransport, GarbageAfterHelloIsAProtocolError) {
  TransportDriver driver;
  Node b = Node::Start(driver, "b");
  ASSERT_TRUE(b.t);
  RawClient raw(b.t->address());
  ASSERT_TRUE(raw.ok());
  const std::string bytes = Header(0x4f480000 | 1, 0, 0, 0, 1) + "z" + Header(0x12340000 | 2, 0, 0, 0, 0);
  ASSERT_TRUE(raw.SendAll(bytes.data(), bytes.size()));
  auto down = b.AwaitKind(Kind::kPeerDown);
  ASSERT_TRUE(down.has_value()) << "seen at b: " << b.Pending();
  EXPECT_EQ(b.NameOf(down->peer), "z");
  EXPECT_NE(down->reason.find("protocol error"), std::string::npos) << down->reason;
  EXPECT_TRUE(raw.WaitClosed(driver));
  EXPECT_EQ(b.t->connections(), 0u);
}

}  // namespace
}  // namespace ohio
