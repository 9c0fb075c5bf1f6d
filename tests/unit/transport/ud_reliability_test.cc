// The reliability of the UD path, without a device (daemon/transport/verbs/ud/ud_reliability.h):
// the window bounds what is in flight, what stays unacknowledged is sent again and counted,
// duplicates and datagrams from beyond the window are dropped, datagrams arriving out of order
// are each accepted once, acknowledgements (cumulative and selective, themselves reordered)
// release exactly what they say, sequence numbers wrap, and a silent peer is given up. Then a
// simulated channel that drops, duplicates and reorders datagrams and acks: every datagram is
// delivered exactly once and the streams drain.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "daemon/transport/verbs/ud/ud_reliability.h"

namespace ohio {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

const UdClock::time_point t0{};

UdStreamOptions Options(uint32_t window) {
  UdStreamOptions o;
  o.window = window;
  o.retransmit_after = microseconds(100);
  o.give_up_after = milliseconds(10);
  return o;
}

TEST(UdSequence, ComparesAcrossTheWrap) {
  EXPECT_TRUE(SeqBefore(1, 2));
  EXPECT_FALSE(SeqBefore(2, 1));
  EXPECT_FALSE(SeqBefore(7, 7));
  EXPECT_TRUE(SeqBefore(0xFFFFFFFFu, 0));
  EXPECT_TRUE(SeqBefore(0xFFFFFFF0u, 0x10));
  EXPECT_FALSE(SeqBefore(0x10, 0xFFFFFFF0u));
}

TEST(UdSendWindow, TheWindowBoundsWhatIsInFlightAndAnAckMakesRoom) {
  UdSendWindow w(Options(4), 100);
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(w.Send(t0), 100 + i);
  EXPECT_FALSE(w.HasRoom());
  EXPECT_EQ(w.Send(t0), std::nullopt);
  EXPECT_EQ(w.in_flight(), 4u);
  EXPECT_EQ(w.Acknowledge(102, 0), 2u);  // 100 and 101 held
  EXPECT_EQ(w.in_flight(), 2u);
  EXPECT_EQ(w.Send(t0), 104u);
  EXPECT_EQ(w.Send(t0), 105u);
  EXPECT_EQ(w.Send(t0), std::nullopt);
  EXPECT_EQ(w.Acknowledge(106, 0), 4u);
  EXPECT_EQ(w.in_flight(), 0u);
  EXPECT_EQ(w.NextRetransmission(), std::nullopt);
}

TEST(UdSendWindow, WhatStaysUnacknowledgedIsSentAgainOnceDueAndCounted) {
  UdSendWindow w(Options(8));
  w.Send(t0);                    // 0
  w.Send(t0 + microseconds(50));  // 1
  w.Send(t0 + microseconds(60));  // 2
  EXPECT_TRUE(w.DueForRetransmission(t0 + microseconds(99)).empty());
  EXPECT_EQ(w.NextRetransmission(), t0 + microseconds(100));
  EXPECT_EQ(w.DueForRetransmission(t0 + microseconds(100)), std::vector<uint32_t>{0});
  // The timeout doubled (200 us): 1 is not due at 150 any more, but at 250; 0's clock started
  // again, and it waits twice the timeout.
  EXPECT_TRUE(w.DueForRetransmission(t0 + microseconds(155)).empty());
  EXPECT_EQ(w.DueForRetransmission(t0 + microseconds(250)), std::vector<uint32_t>{1});
  // 2 held (bit 1: 0 + 1 + 1), 0 and 1 not. Something new is acknowledged: the timeout is back
  // to 100 us, and each of 0 and 1 waits twice that, having been sent again once.
  EXPECT_EQ(w.Acknowledge(0, 0b10), 1u);
  EXPECT_TRUE(w.DueForRetransmission(t0 + microseconds(299)).empty());  // 0 at 100 + 2 x 100
  EXPECT_EQ(w.DueForRetransmission(t0 + microseconds(450)), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(w.retransmissions(), 4u);
  EXPECT_EQ(w.in_flight(), 2u);
  EXPECT_EQ(w.Acknowledge(3, 0), 2u);
  EXPECT_EQ(w.in_flight(), 0u);
  EXPECT_TRUE(w.DueForRetransmission(t0 + milliseconds(5)).empty());
}

// The timeout follows the measured round trip (never below the floor), ignores datagrams that
// were sent again (Karn), and doubles for a datagram at each of its retransmissions.
TEST(UdSendWindow, TheTimeoutFollowsTheRoundTripAndBacksOff) {
  UdStreamOptions o = Options(8);  // floor 100 us
  o.give_up_after = milliseconds(1000);  // the ceiling, a quarter of it, out of the way
  UdSendWindow w(o);
  EXPECT_EQ(w.timeout(), microseconds(100));
  w.Send(t0);                               // 0
  EXPECT_EQ(w.Acknowledge(1, 0, t0 + microseconds(1000)), 1u);  // a 1 ms round trip
  EXPECT_EQ(w.timeout(), microseconds(1000 + 4 * 500));         // srtt + 4 * rttvar
  const auto t1 = t0 + milliseconds(10);
  w.Send(t1);  // 1
  EXPECT_TRUE(w.DueForRetransmission(t1 + microseconds(2999)).empty());
  EXPECT_EQ(w.DueForRetransmission(t1 + microseconds(3000)), std::vector<uint32_t>{1});
  // A timeout doubles the timeout, and the datagram sent again waits twice that.
  EXPECT_EQ(w.timeout(), microseconds(6000));
  EXPECT_TRUE(w.DueForRetransmission(t1 + microseconds(3000 + 11999)).empty());
  EXPECT_EQ(w.DueForRetransmission(t1 + microseconds(3000 + 12000)), std::vector<uint32_t>{1});
  EXPECT_EQ(w.timeout(), microseconds(12000));
  EXPECT_EQ(w.NextRetransmission(), t1 + microseconds(15000 + 48000));
  // Its acknowledgement, long after, measures nothing (it was sent three times), but it is
  // progress: the timeout is what was measured again.
  EXPECT_EQ(w.Acknowledge(2, 0, t1 + milliseconds(100)), 1u);
  EXPECT_EQ(w.timeout(), microseconds(3000));
  // The next one sent once and acknowledged after 1 ms measures again: 1 ms + 4 x 375 us.
  const auto t2 = t1 + milliseconds(200);
  w.Send(t2);  // 2
  EXPECT_EQ(w.Acknowledge(3, 0, t2 + microseconds(1000)), 1u);
  EXPECT_EQ(w.timeout(), microseconds(2500));
  // Never above a quarter of the give-up time.
  UdSendWindow capped(Options(8));  // gives up after 10 ms
  capped.Send(t0);
  capped.Acknowledge(1, 0, t0 + milliseconds(4));
  EXPECT_EQ(capped.timeout(), microseconds(2500));
}

// However many are due, at most retransmit_burst go again at once, the oldest first.
TEST(UdSendWindow, WhatGoesAgainAtOnceIsBounded) {
  UdStreamOptions o = Options(64);
  o.retransmit_burst = 3;
  UdSendWindow w(o);
  for (int i = 0; i < 10; ++i) w.Send(t0);
  EXPECT_EQ(w.DueForRetransmission(t0 + microseconds(100)), (std::vector<uint32_t>{0, 1, 2}));
  // The rest on later passes (the timeout doubled meanwhile: 200 us).
  EXPECT_TRUE(w.DueForRetransmission(t0 + microseconds(199)).empty());
  EXPECT_EQ(w.DueForRetransmission(t0 + microseconds(200)), (std::vector<uint32_t>{3, 4, 5}));
  EXPECT_EQ(w.retransmissions(), 6u);
}

TEST(UdSendWindow, AForeignAckAcknowledgesNothingAndAStaleOneOnlyItsMask) {
  UdSendWindow w(Options(8));
  for (int i = 0; i < 5; ++i) w.Send(t0);  // 0..4
  EXPECT_EQ(w.Acknowledge(9, 0), 0u);      // says 5..8 are held: never sent
  EXPECT_EQ(w.Acknowledge(0x80000000u, ~uint64_t{0}), 0u);
  EXPECT_EQ(w.in_flight(), 5u);
  EXPECT_EQ(w.Acknowledge(2, 0), 2u);
  // An older ack arriving late: nothing cumulative, but its mask says 3 is held (1 + 1 + 1).
  EXPECT_EQ(w.Acknowledge(1, 0b10), 1u);
  EXPECT_EQ(w.Acknowledge(1, 0b10), 0u);  // the same again: nothing new
  EXPECT_EQ(w.in_flight(), 2u);          // 2 and 4
  EXPECT_EQ(w.DueForRetransmission(t0 + milliseconds(1)), (std::vector<uint32_t>{2, 4}));
  EXPECT_EQ(w.Acknowledge(5, 0), 2u);
  EXPECT_EQ(w.in_flight(), 0u);
}

TEST(UdSendWindow, ASelectiveAckOfTheFrontMakesRoom) {
  UdSendWindow w(Options(2));
  w.Send(t0);  // 0
  w.Send(t0);  // 1
  // Held: 1 (bit 0), not 0; then 0 cumulatively.
  EXPECT_EQ(w.Acknowledge(0, 0b1), 1u);
  EXPECT_FALSE(w.HasRoom());
  EXPECT_EQ(w.Acknowledge(1, 0), 1u);
  EXPECT_EQ(w.in_flight(), 0u);
  EXPECT_EQ(w.next_seq(), 2u);
  EXPECT_TRUE(w.HasRoom());
  EXPECT_EQ(w.Send(t0), 2u);
  EXPECT_EQ(w.Send(t0), 3u);
}

// What the sender frees and ends by: held cumulatively or by a mask, never a number not sent,
// and across the wrap of the sequence numbers.
TEST(UdSendWindow, HeldIsWhatThePeerAcknowledgedByEitherMeans) {
  UdSendWindow w(Options(8), 0xFFFFFFFEu);
  for (int i = 0; i < 5; ++i) w.Send(t0);  // 0xFFFFFFFE, 0xFFFFFFFF, 0, 1, 2
  EXPECT_FALSE(w.Held(0xFFFFFFFEu));
  EXPECT_FALSE(w.Held(3));  // not sent
  // Every datagram before 0xFFFFFFFF, and 1 by the mask (bit 1: 0xFFFFFFFF + 1 + 1).
  w.Acknowledge(0xFFFFFFFFu, 0b10);
  EXPECT_TRUE(w.Held(0xFFFFFFFEu));
  EXPECT_FALSE(w.Held(0xFFFFFFFFu));
  EXPECT_FALSE(w.Held(0));
  EXPECT_TRUE(w.Held(1));
  EXPECT_FALSE(w.Held(2));
  EXPECT_EQ(w.held_before(), 0xFFFFFFFFu);
  // A late, older ack changes nothing that is held.
  w.Acknowledge(0xFFFFFFFEu, 0);
  EXPECT_TRUE(w.Held(0xFFFFFFFEu));
  EXPECT_TRUE(w.Held(1));
  // The gap filled: everything before 2 is held, the front dropped past the mask-held 1.
  w.Acknowledge(1, 0);
  EXPECT_EQ(w.held_before(), 2u);
  EXPECT_TRUE(w.Held(0) && w.Held(1));
  EXPECT_FALSE(w.Held(2));
  EXPECT_FALSE(w.Held(3));
}

TEST(UdSendWindow, APeerThatNeverAcknowledgesIsSilentAfterTheGiveUpTime) {
  UdSendWindow w(Options(8));
  EXPECT_FALSE(w.PeerSilent(t0 + milliseconds(100)));  // nothing in flight: nothing to answer
  w.Send(t0);
  w.DueForRetransmission(t0 + milliseconds(5));  // sent again: the first send still counts
  EXPECT_FALSE(w.PeerSilent(t0 + microseconds(9999)));
  EXPECT_TRUE(w.PeerSilent(t0 + milliseconds(10)));
  w.Acknowledge(1, 0);
  EXPECT_FALSE(w.PeerSilent(t0 + milliseconds(100)));
}

TEST(UdReceiveWindow, AcceptsEachDatagramOnceInAnyOrder) {
  UdReceiveWindow r(8, 10);
  EXPECT_EQ(r.Receive(12), UdReceiveWindow::Verdict::kNew);
  EXPECT_EQ(r.next_expected(), 10u);
  EXPECT_EQ(r.sack(), 0b10u);  // 12 = 10 + 1 + 1
  EXPECT_EQ(r.Receive(12), UdReceiveWindow::Verdict::kDuplicate);
  EXPECT_EQ(r.Receive(11), UdReceiveWindow::Verdict::kNew);
  EXPECT_EQ(r.next_expected(), 10u);
  EXPECT_EQ(r.Receive(10), UdReceiveWindow::Verdict::kNew);
  EXPECT_EQ(r.next_expected(), 13u);
  EXPECT_EQ(r.sack(), 0u);
  EXPECT_EQ(r.Receive(10), UdReceiveWindow::Verdict::kDuplicate);  // behind: held long ago
  EXPECT_EQ(r.Receive(9), UdReceiveWindow::Verdict::kDuplicate);
  EXPECT_EQ(r.duplicates(), 3u);
}

TEST(UdReceiveWindow, DropsWhatIsBeyondTheWindow) {
  UdReceiveWindow r(8, 0);
  EXPECT_EQ(r.Receive(7), UdReceiveWindow::Verdict::kNew);
  EXPECT_EQ(r.Receive(8), UdReceiveWindow::Verdict::kBeyondWindow);
  EXPECT_EQ(r.Receive(0x7FFFFFFFu), UdReceiveWindow::Verdict::kBeyondWindow);
  for (uint32_t s = 0; s < 7; ++s) EXPECT_EQ(r.Receive(s), UdReceiveWindow::Verdict::kNew);
  EXPECT_EQ(r.next_expected(), 8u);
  // The slots of 0..7 now serve 8..15.
  EXPECT_EQ(r.Receive(15), UdReceiveWindow::Verdict::kNew);
  EXPECT_EQ(r.Receive(8), UdReceiveWindow::Verdict::kNew);
  EXPECT_EQ(r.next_expected(), 9u);
  EXPECT_EQ(r.sack(), uint64_t{1} << 5);  // 15 = 9 + 1 + 5
}

TEST(UdStream, SequenceNumbersWrap) {
  const uint32_t first = 0xFFFFFFFAu;
  UdSendWindow w(Options(16), first);
  UdReceiveWindow r(16, first);
  std::vector<uint32_t> sent;
  for (int i = 0; i < 12; ++i) sent.push_back(*w.Send(t0));
  EXPECT_EQ(sent.front(), first);
  EXPECT_EQ(sent.back(), 5u);  // 0xFFFFFFFA + 11
  // Across the wrap, in reverse: each is new once, and then all are held cumulatively.
  for (auto it = sent.rbegin(); it != sent.rend(); ++it) EXPECT_EQ(r.Receive(*it), UdReceiveWindow::Verdict::kNew);
  EXPECT_EQ(r.next_expected(), 6u);
  EXPECT_EQ(r.Receive(0xFFFFFFFFu), UdReceiveWindow::Verdict::kDuplicate);
  EXPECT_EQ(w.Acknowledge(r.next_expected(), r.sack()), 12u);
  EXPECT_EQ(w.in_flight(), 0u);
  EXPECT_EQ(w.next_seq(), 6u);
}

// Two daemons' streams over a channel that drops, duplicates and reorders datagrams and acks
// alike (a seeded generator, so a failure repeats), on a simulated clock: every datagram is
// delivered exactly once, no datagram beyond the window ever arrives, and both sides drain
// within a bounded number of steps.
struct Shares {
  double drop, duplicate, reorder;
};

void RunLossyChannel(uint32_t first_seq, Shares shares, uint32_t seed) {
  constexpr uint32_t kWindow = 64, kDatagrams = 20000;
  UdStreamOptions o = Options(kWindow);
  o.give_up_after = milliseconds(100000);
  UdSendWindow sender(o, first_seq);
  UdReceiveWindow receiver(kWindow, first_seq);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> chance(0, 1);
  // In flight on the wire: (arrival time, kind, seq or ack, sack).
  struct OnWire {
    long at_us;
    bool is_ack;
    uint32_t seq;
    uint64_t sack;
  };
  std::multimap<long, OnWire> wire;
  auto transmit = [&](long now_us, OnWire w) {
    if (chance(rng) < shares.drop) return;
    const long delay = 20 + (chance(rng) < shares.reorder ? static_cast<long>(chance(rng) * 300) : 0);
    w.at_us = now_us + delay;
    wire.emplace(w.at_us, w);
    if (chance(rng) < shares.duplicate) {
      w.at_us += 5 + static_cast<long>(chance(rng) * 200);
      wire.emplace(w.at_us, w);
    }
  };
  std::map<uint32_t, int> delivered;  // by offset from first_seq
  uint32_t queued = 0;
  long now_us = 0;
  for (int step = 0; step < 2000000 && (queued < kDatagrams || sender.in_flight() > 0); ++step) {
    const UdClock::time_point now = t0 + microseconds(now_us);
    while (queued < kDatagrams && sender.HasRoom()) {
      transmit(now_us, {0, false, *sender.Send(now), 0});
      ++queued;
    }
    for (uint32_t seq : sender.DueForRetransmission(now)) transmit(now_us, {0, false, seq, 0});
    // The next event: an arrival, or a retransmission coming due.
    long next_us = now_us + 1000;
    if (!wire.empty()) next_us = std::min(next_us, wire.begin()->first);
    if (auto due = sender.NextRetransmission()) {
      next_us = std::min(next_us, static_cast<long>(std::chrono::duration_cast<microseconds>(*due - t0).count()));
    }
    now_us = std::max(now_us + 1, next_us);
    while (!wire.empty() && wire.begin()->first <= now_us) {
      const OnWire w = wire.begin()->second;
      wire.erase(wire.begin());
      if (w.is_ack) {
        // With the time of arrival, as the transport does: the round trip is measured.
        sender.Acknowledge(w.seq, w.sack, t0 + microseconds(now_us));
        continue;
      }
      const UdReceiveWindow::Verdict v = receiver.Receive(w.seq);
      ASSERT_NE(v, UdReceiveWindow::Verdict::kBeyondWindow) << "seq " << w.seq;
      if (v == UdReceiveWindow::Verdict::kNew) ++delivered[w.seq - first_seq];
      // Every arrival is acknowledged (the ack of a duplicate tells a sender its ack was lost).
      transmit(now_us, {0, true, receiver.next_expected(), receiver.sack()});
    }
  }
  EXPECT_EQ(queued, kDatagrams);
  EXPECT_EQ(sender.in_flight(), 0u);
  ASSERT_EQ(delivered.size(), kDatagrams);
  for (const auto& [offset, times] : delivered) ASSERT_EQ(times, 1) << "datagram " << offset;
  EXPECT_EQ(receiver.next_expected(), first_seq + kDatagrams);
  if (shares.drop > 0) EXPECT_GT(sender.retransmissions(), 0u);
  if (shares.drop == 0 && shares.reorder == 0) EXPECT_EQ(sender.retransmissions(), 0u);
  if (shares.duplicate > 0 || shares.drop > 0) EXPECT_GT(receiver.duplicates(), 0u);
  std::printf("drop %.2f duplicate %.2f reorder %.2f: %u datagrams in %ld us, %lu sent again, %lu duplicates\n",
              shares.drop, shares.duplicate, shares.reorder, kDatagrams, now_us,
              static_cast<unsigned long>(sender.retransmissions()), static_cast<unsigned long>(receiver.duplicates()));
}

TEST(UdStream, APerfectChannelNeedsNoRetransmission) { RunLossyChannel(0, {0, 0, 0}, 1); }

TEST(UdStream, EveryDatagramArrivesOnceThroughLossDuplicationAndReordering) {
  RunLossyChannel(0, {0.1, 0.05, 0.3}, 7);
}

TEST(UdStream, AHeavilyLossyChannelAcrossTheWrap) { RunLossyChannel(0xFFFFF000u, {0.3, 0.1, 0.5}, 11); }

}  // namespace
}  // namespace ohio
