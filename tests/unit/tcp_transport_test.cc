// Tests of the TCP data transport (daemon/transport:tcp) over loopback: connection set-up by
// the node whose name sorts first, puts into registered regions, sends, queued work, ordering,
// bad puts, peer loss and reconnection, garbage on the data port, and a three-node mesh.
#include "daemon/transport/tcp_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
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

std::string Describe(const TransportEvent& e) {
  return std::string(KindName(e.kind)) + "{peer=" + e.peer + " imm=" + std::to_string(e.imm) +
         " cookie=" + std::to_string(e.cookie) + " bytes=" + std::to_string(e.bytes) +
         " payload.size=" + std::to_string(e.payload.size()) + "}";
}

// Polls `pred` until it holds or the deadline passes (bounded polling, never an open wait).
bool WaitUntil(const std::function<bool()>& pred, Clock::duration timeout = kDeadline) {
  const auto deadline = Clock::now() + timeout;
  while (!pred()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// A transport and the events taken from it that no test has consumed yet.
struct Node {
  std::string self;
  std::unique_ptr<TcpTransport> t;
  std::deque<TransportEvent> seen;

  static Node Start(const std::string& name) {
    Node n;
    n.self = name;
    auto r = TcpTransport::Start(name, "127.0.0.1", 0, "127.0.0.1");
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (r.ok()) n.t = std::move(r).value();
    return n;
  }

  // Waits on event_fd() with poll() until `deadline`, then takes whatever is pending.
  // False when nothing arrived before the deadline.
  bool PollOnce(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left < 0) return false;
    struct pollfd p = {t->event_fd(), POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(left) + 1);
    if (r < 0 && errno != EINTR) {
      ADD_FAILURE() << "poll: " << std::strerror(errno);
      return false;
    }
    std::vector<TransportEvent> got;
    t->Poll(&got);
    for (auto& e : got) seen.push_back(std::move(e));
    return !got.empty();
  }

  // The first event (in arrival order) matching `pred`, removed from `seen`; the events before
  // it stay. nullopt when none came before the deadline.
  std::optional<TransportEvent> Await(const std::function<bool(const TransportEvent&)>& pred,
                                      Clock::duration timeout = kDeadline) {
    const auto deadline = Clock::now() + timeout;
    size_t checked = 0;
    for (;;) {
      for (; checked < seen.size(); ++checked) {
        if (pred(seen[checked])) {
          TransportEvent e = std::move(seen[checked]);
          seen.erase(seen.begin() + static_cast<std::ptrdiff_t>(checked));
          return e;
        }
      }
      if (Clock::now() >= deadline) return std::nullopt;
      PollOnce(deadline);
    }
  }

  std::optional<TransportEvent> AwaitKind(Kind kind, Clock::duration timeout = kDeadline) {
    return Await([kind](const TransportEvent& e) { return e.kind == kind; }, timeout);
  }

  std::string Pending() const {
    std::string s;
    for (const auto& e : seen) s += Describe(e) + " ";
    return s.empty() ? "(none)" : s;
  }

  bool HasKind(Kind kind) const {
    return std::any_of(seen.begin(), seen.end(), [kind](const TransportEvent& e) { return e.kind == kind; });
  }
};

std::vector<uint8_t> Pattern(size_t bytes, uint32_t seed) {
  std::vector<uint8_t> v(bytes);
  std::mt19937 rng(seed);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Both sides ask for the connection (twice: Connect is idempotent) and wait until each has it.
void ConnectPair(Node& x, Node& y) {
  ASSERT_TRUE(x.t->Connect(y.self, y.t->address()).ok());
  ASSERT_TRUE(y.t->Connect(x.self, x.t->address()).ok());
  ASSERT_TRUE(x.t->Connect(y.self, y.t->address()).ok());
  ASSERT_TRUE(y.t->Connect(x.self, x.t->address()).ok());
  auto has = [](Node& n, const std::string& peer) {
    auto peers = n.t->connected_peers();
    return std::find(peers.begin(), peers.end(), peer) != peers.end();
  };
  ASSERT_TRUE(WaitUntil([&] { return has(x, y.self) && has(y, x.self); }))
      << x.self << " peers " << x.t->connections() << ", " << y.self << " peers " << y.t->connections();
}

// One put from `from` to `to` into a fresh region; checks the bytes, kArrived and kPutDone.
void ExpectPutWorks(Node& from, Node& to, uint32_t imm, uint64_t cookie) {
  std::vector<uint8_t> region(8192, 0);
  auto key = to.t->RegisterRegion(region.data(), region.size());
  ASSERT_TRUE(key.ok());
  const std::vector<uint8_t> src = Pattern(4000, imm);
  ASSERT_TRUE(from.t->Put(to.self, src.data(), src.size(), key.value(), 100, imm, cookie).ok());
  auto arrived = to.Await([&](const TransportEvent& e) { return e.kind == Kind::kArrived; });
  ASSERT_TRUE(arrived.has_value()) << "no kArrived at " << to.self << "; seen " << to.Pending();
  EXPECT_EQ(arrived->peer, from.self);
  EXPECT_EQ(arrived->imm, imm);
  EXPECT_EQ(arrived->bytes, src.size());
  auto done = from.Await([&](const TransportEvent& e) { return e.kind == Kind::kPutDone && e.cookie == cookie; });
  ASSERT_TRUE(done.has_value()) << "no kPutDone at " << from.self << "; seen " << from.Pending();
  EXPECT_EQ(done->peer, to.self);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), region.begin() + 100));
  EXPECT_TRUE(std::all_of(region.begin(), region.begin() + 100, [](uint8_t b) { return b == 0; }));
  EXPECT_TRUE(std::all_of(region.begin() + 100 + static_cast<std::ptrdiff_t>(src.size()), region.end(),
                          [](uint8_t b) { return b == 0; }));
  to.t->DeregisterRegion(key.value());
}

void ExpectSendWorks(Node& from, Node& to, const std::string& message) {
  ASSERT_TRUE(from.t->Send(to.self, message).ok());
  auto m = to.AwaitKind(Kind::kMessage);
  ASSERT_TRUE(m.has_value()) << "no kMessage at " << to.self << "; seen " << to.Pending();
  EXPECT_EQ(m->peer, from.self);
  EXPECT_EQ(m->payload.size(), message.size());
  EXPECT_TRUE(m->payload == message) << "message of " << message.size() << " bytes garbled";
}

TEST(TcpTransport, StartGivesLoopbackAddressWithPort) {
  Node a = Node::Start("a");
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

// 1. A 1 MiB put lands byte for byte; one connection a side; sends each way, empty and 60 KiB.
TEST(TcpTransport, PairPutAndSend) {
  Node a = Node::Start("a");
  Node b = Node::Start("b");
  ASSERT_TRUE(a.t && b.t);
  ConnectPair(a, b);

  constexpr uint64_t kBytes = 1 << 20;
  constexpr uint64_t kOffset = 12345;
  std::vector<uint8_t> region(kBytes + 2 * kOffset, 0xEE);
  auto key = b.t->RegisterRegion(region.data(), region.size());
  ASSERT_TRUE(key.ok()) << key.status().message();
  const std::vector<uint8_t> src = Pattern(kBytes, 7);
  ASSERT_TRUE(a.t->Put("b", src.data(), kBytes, key.value(), kOffset, 0xDEADBEEF, 0x123456789ABCull).ok());

  auto arrived = b.AwaitKind(Kind::kArrived);
  ASSERT_TRUE(arrived.has_value()) << "seen at b: " << b.Pending();
  EXPECT_EQ(arrived->peer, "a");
  EXPECT_EQ(arrived->imm, 0xDEADBEEFu);
  EXPECT_EQ(arrived->bytes, kBytes);
  auto done = a.AwaitKind(Kind::kPutDone);
  ASSERT_TRUE(done.has_value()) << "seen at a: " << a.Pending();
  EXPECT_EQ(done->cookie, 0x123456789ABCull);
  EXPECT_EQ(done->peer, "b");

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
  std::string binary(60 * 1024, '\0');
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
  Node a = Node::Start("a");
  ASSERT_TRUE(a.t);
  EXPECT_FALSE(a.t->Send("b", std::string(64 * 1024 + 1, 'x')).ok());
}

// 2. The non-dialer (b) puts and sends before any connection exists; so does the dialer (a)
// before its Connect. Everything is delivered, in order, once a connects.
TEST(TcpTransport, WorkQueuedBeforeConnectionIsFlushed) {
  Node a = Node::Start("a");
  Node b = Node::Start("b");
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
    ASSERT_TRUE(b.t->Put("a", from_b.data() + i * 4096, 4096, key_a.value(), i * 4096, 100 + i, 200 + i).ok());
  }
  ASSERT_TRUE(b.t->Send("a", "queued at b").ok());
  // b's Connect does not dial (b sorts after a); still nothing may be lost.
  ASSERT_TRUE(b.t->Connect("a", a.t->address()).ok());
  // a queues too, before it connects.
  for (uint32_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(a.t->Put("b", from_a.data() + i * 4096, 4096, key_b.value(), i * 4096, 300 + i, 400 + i).ok());
  }
  ASSERT_TRUE(a.t->Send("b", "queued at a").ok());
  ASSERT_TRUE(a.t->Connect("b", b.t->address()).ok());

  for (uint32_t i = 0; i < 3; ++i) {
    auto at_a = a.AwaitKind(Kind::kArrived);
    ASSERT_TRUE(at_a.has_value()) << "put " << i << " from b; seen at a: " << a.Pending();
    EXPECT_EQ(at_a->imm, 100 + i);
    EXPECT_EQ(at_a->peer, "b");
    EXPECT_EQ(at_a->bytes, 4096u);
    auto at_b = b.AwaitKind(Kind::kArrived);
    ASSERT_TRUE(at_b.has_value()) << "put " << i << " from a; seen at b: " << b.Pending();
    EXPECT_EQ(at_b->imm, 300 + i);
    EXPECT_EQ(at_b->peer, "a");
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
  EXPECT_EQ(msg_a->payload, "queued at b");
  auto msg_b = b.AwaitKind(Kind::kMessage);
  ASSERT_TRUE(msg_b.has_value()) << b.Pending();
  EXPECT_EQ(msg_b->payload, "queued at a");

  EXPECT_EQ(region_a, from_b);
  EXPECT_EQ(region_b, from_a);
  EXPECT_EQ(a.t->connections(), 1u);
  EXPECT_EQ(b.t->connections(), 1u);
  EXPECT_FALSE(a.HasKind(Kind::kPeerDown)) << a.Pending();
  EXPECT_FALSE(b.HasKind(Kind::kPeerDown)) << b.Pending();
}

// 3. 1000 puts of 4 KiB: kArrived in issue order with their imms, kPutDone in order with
// their cookies, and every byte in place.
TEST(TcpTransport, ManyPutsArriveInOrder) {
  Node a = Node::Start("a");
  Node b = Node::Start("b");
  ASSERT_TRUE(a.t && b.t);
  ConnectPair(a, b);

  constexpr uint32_t kPuts = 1000;
  constexpr uint64_t kChunk = 4096;
  std::vector<uint8_t> region(kPuts * kChunk, 0);
  auto key = b.t->RegisterRegion(region.data(), region.size());
  ASSERT_TRUE(key.ok());
  const std::vector<uint8_t> src = Pattern(kPuts * kChunk, 3);
  for (uint32_t i = 0; i < kPuts; ++i) {
    // Alternate the destination order so the data check also catches misplaced offsets.
    const uint64_t slot = (i % 2 == 0) ? i : kPuts - i;
    ASSERT_TRUE(a.t->Put("b", src.data() + slot * kChunk, kChunk, key.value(), slot * kChunk, 0x10000 + i, 5000 + i)
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

// 4. Puts naming an unknown key, a deregistered region, or bytes beyond the region's end are
// dropped: no kArrived, no write outside registered memory, and the connection lives on.
TEST(TcpTransport, BadPutsAreDroppedAndConnectionSurvives) {
  Node a = Node::Start("a");
  Node b = Node::Start("b");
  ASSERT_TRUE(a.t && b.t);
  ConnectPair(a, b);

  constexpr uint64_t kRegion = 64 * 1024;
  std::vector<uint8_t> live(kRegion, 0);
  std::vector<uint8_t> gone(kRegion, 0);
  auto live_key = b.t->RegisterRegion(live.data(), live.size());
  auto gone_key = b.t->RegisterRegion(gone.data(), gone.size());
  ASSERT_TRUE(live_key.ok() && gone_key.ok());
  b.t->DeregisterRegion(gone_key.value());
  const uint64_t never = live_key.value() + gone_key.value() + 1000;

  const std::vector<uint8_t> src = Pattern(2 * kRegion, 4);
  struct Bad {
    const char* what;
    uint64_t key, offset, bytes;
  };
  const std::vector<Bad> bad = {
      {"never registered key", never, 0, 4096},
      {"deregistered region", gone_key.value(), 0, 4096},
      {"offset+bytes past the end", live_key.value(), kRegion - 100, 4096},
      {"offset past the end", live_key.value(), kRegion + 1, 16},
      {"bytes larger than the region", live_key.value(), 0, 2 * kRegion},
      {"offset+bytes overflowing 64 bits", live_key.value(), ~uint64_t{0} - 10, 4096},
  };
  for (uint32_t i = 0; i < bad.size(); ++i) {
    const Bad& p = bad[i];
    ASSERT_TRUE(a.t->Put("b", src.data(), p.bytes, p.key, p.offset, i + 1, 900 + i).ok()) << p.what;
  }
  const uint32_t good_imm = 777;
  ASSERT_TRUE(a.t->Put("b", src.data(), 4096, live_key.value(), 8192, good_imm, 1).ok());

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
    for (const auto& e : b.seen) {
      if (e.kind == Kind::kArrived) ADD_FAILURE() << "spurious " << Describe(e);
    }
    // Keep the checks below about the connection, not about these leftovers.
    b.seen.erase(std::remove_if(b.seen.begin(), b.seen.end(),
                                [](const TransportEvent& e) { return e.kind == Kind::kArrived; }),
                 b.seen.end());
  }
  EXPECT_EQ(std::memcmp(live.data() + 8192, src.data(), 4096), 0);
  EXPECT_TRUE(std::all_of(live.begin(), live.begin() + 8192, [](uint8_t x) { return x == 0; }));
  EXPECT_TRUE(std::all_of(live.begin() + 8192 + 4096, live.end(), [](uint8_t x) { return x == 0; }));
  EXPECT_TRUE(std::all_of(gone.begin(), gone.end(), [](uint8_t x) { return x == 0; }));

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
  Node a = Node::Start("a");
  Node b = Node::Start("b");
  ASSERT_TRUE(a.t && b.t);
  ConnectPair(a, b);
  ExpectPutWorks(a, b, 1, 1);

  Node& lost = lose_dialer ? a : b;
  Node& survivor = lose_dialer ? b : a;
  lost.t.reset();
  auto down = survivor.AwaitKind(Kind::kPeerDown);
  ASSERT_TRUE(down.has_value()) << "no kPeerDown at " << survivor.self << "; seen " << survivor.Pending();
  EXPECT_EQ(down->peer, lost.self);
  EXPECT_FALSE(down->payload.empty()) << "kPeerDown carries no reason";
  EXPECT_EQ(survivor.t->connections(), 0u);
  EXPECT_TRUE(survivor.t->connected_peers().empty());

  lost = Node::Start(lost.self);
  ASSERT_TRUE(lost.t);
  ConnectPair(a, b);
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

  // True once the other side closed the connection (EOF or reset) before the deadline.
  bool WaitClosed(Clock::duration timeout = kDeadline) {
    const auto deadline = Clock::now() + timeout;
    char buf[4096];
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left < 0) return false;
      struct pollfd p = {fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left) + 1) <= 0) continue;
      ssize_t r = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
      if (r == 0) return true;
      if (r < 0 && errno != EAGAIN && errno != EINTR) return true;  // ECONNRESET and the like
    }
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
TEST(TcpTransport, GarbageOnDataPortIsDisconnected) {
  Node a = Node::Start("a");
  Node b = Node::Start("b");
  ASSERT_TRUE(a.t && b.t);
  ConnectPair(a, b);

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
    EXPECT_TRUE(raw.WaitClosed()) << "b did not disconnect a client sending " << c.what;
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
TEST(TcpTransport, HelloWithEmptyNameIsRejected) {
  Node a = Node::Start("a");
  Node b = Node::Start("b");
  ASSERT_TRUE(a.t && b.t);
  ConnectPair(a, b);
  RawClient raw(b.t->address());
  ASSERT_TRUE(raw.ok());
  const std::string hello = Header(0x4f480000 | 1, 0, 0, 0, 0);
  ASSERT_TRUE(raw.SendAll(hello.data(), hello.size()));
  const bool closed = raw.WaitClosed(std::chrono::seconds(2));
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
  std::vector<Node> nodes;
  for (const char* name : {"a", "b", "c"}) nodes.push_back(Node::Start(name));
  for (auto& n : nodes) ASSERT_TRUE(n.t);
  for (auto& x : nodes) {
    for (auto& y : nodes) {
      if (&x != &y) {
        ASSERT_TRUE(x.t->Connect(y.self, y.t->address()).ok());
      }
    }
  }
  ASSERT_TRUE(WaitUntil([&] {
    return std::all_of(nodes.begin(), nodes.end(), [](const Node& n) { return n.t->connections() == 2; });
  })) << "connections: " << nodes[0].t->connections() << " " << nodes[1].t->connections() << " "
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

}  // namespace
}  // namespace ohio
