// Reliable delivery over UD, decided apart from the verbs calls that carry it. UD loses,
// duplicates and reorders datagrams; a put must still land every byte exactly once, and a late
// copy of an old datagram must never overwrite a buffer that has been reused since.
//
// Each direction between two daemons is a stream of datagrams numbered by a 32-bit sequence
// number that wraps (compared as RFC 1982 serial numbers: a is before b when b is less than 2^31
// ahead). The sender keeps at most `window` datagrams unacknowledged; the receiver acknowledges
// cumulatively (it holds every datagram before `ack`) with a 64-bit mask of those it holds just
// beyond; the sender sends again what stays unacknowledged for the retransmission timeout, and
// gives the peer up when its oldest datagram has gone unacknowledged for `give_up_after`.
// The timeout follows the measured round trip as TCP's does (RFC 6298: smoothed round trip plus
// four times its variation, never below `retransmit_after`, from datagrams acknowledged without
// having been sent again); it doubles at every timeout until an acknowledgement of something
// new (as Linux's TCP), and a datagram waits twice as long again at each of its own
// retransmissions, never more than a quarter of `give_up_after`: a receiver slower than the first
// guess (a loaded node, an emulated one) is not flooded with copies of a window it is still
// taking in, and a lost datagram is still tried a few times before the peer is given up. At most
// `retransmit_burst` datagrams go again at once, the oldest first, the rest when the next pass
// finds them due: a fabric that drops what comes in bursts (Soft-RoCE's UDP, a switch without
// lossless flow control) is not handed a whole window again at once. The
// receiver accepts a datagram once and only inside its window (datagrams carry their own
// placement, so one arriving early is placed at once: nothing is buffered to put them in order).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace ohio {

using UdClock = std::chrono::steady_clock;

// Whether sequence number a comes before b (b is 1 to 2^31 - 1 ahead of a, modulo 2^32).
inline bool SeqBefore(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }

// The most datagrams a stream may have unacknowledged: a power of two (the receiver's ring),
// far below 2^31 (serial-number comparison), and no more than a selective mask can describe
// past a loss many times over.
constexpr uint32_t kUdMaxWindow = 1u << 16;

struct UdStreamOptions {
  uint32_t window = 256;  // a power of two, at most kUdMaxWindow
  std::chrono::microseconds retransmit_after{2000};  // the timeout's floor, and its first value
  std::chrono::milliseconds give_up_after{30000};
  uint32_t retransmit_burst = 16;
};

// The sending side of one stream.
class UdSendWindow {
 public:
  explicit UdSendWindow(UdStreamOptions options, uint32_t first_seq = 0);

  bool HasRoom() const { return unacked_.size() < options_.window; }
  // The number of the next datagram, sent at `now`; nullopt while the window is full.
  std::optional<uint32_t> Send(UdClock::time_point now);

  // The peer's acknowledgement: every datagram before `next_expected`, and next_expected + 1 + i
  // for each bit i of `sack`. Returns how many datagrams it newly acknowledged. One that says
  // datagrams never sent are held (beyond the next number: not this stream's) acknowledges
  // nothing; one older than acknowledgements already applied (acks are reordered too) releases
  // nothing cumulatively, but its mask still counts.
  // With `now`, the round trip of each datagram it acknowledges that was sent once is measured.
  uint32_t Acknowledge(uint32_t next_expected, uint64_t sack, std::optional<UdClock::time_point> now = std::nullopt);
  // The retransmission timeout now (before a datagram's own doubling).
  std::chrono::microseconds timeout() const { return rto_; }

  // The datagrams to send again at `now`, oldest first: those unacknowledged for
  // retransmit_after since they were last sent. Each is counted, and its send time is now.
  std::vector<uint32_t> DueForRetransmission(UdClock::time_point now);
  // When DueForRetransmission next has something to send; nullopt with nothing in flight.
  std::optional<UdClock::time_point> NextRetransmission() const;
  // The oldest unacknowledged datagram was first sent give_up_after ago or more.
  bool PeerSilent(UdClock::time_point now) const;

  // Whether the peer holds datagram `seq` (it acknowledged it, cumulatively or by a mask), as far
  // as this end knows; a number not sent yet is not held. The sender frees a datagram's buffer
  // and ends a put by this.
  bool Held(uint32_t seq) const {
    if (SeqBefore(seq, base_)) return true;
    return SeqBefore(seq, next_seq()) && unacked_[seq - base_].acked;
  }
  // Every datagram before this one is held.
  uint32_t held_before() const { return base_; }

  uint32_t in_flight() const { return static_cast<uint32_t>(unacked_.size()) - acked_beyond_; }
  uint32_t next_seq() const { return base_ + static_cast<uint32_t>(unacked_.size()); }
  uint64_t retransmissions() const { return retransmissions_; }

 private:
  struct Sent {
    UdClock::time_point first_sent, last_sent;
    bool acked = false;  // by a selective mask, before the datagrams ahead of it
    uint32_t resent = 0;
  };
  void DropAckedFront();
  void Measure(const Sent& s, std::optional<UdClock::time_point> now);
  // When `s` is due again: the timeout, doubled for each time it was sent again, at most Ceiling.
  std::chrono::microseconds WaitFor(const Sent& s) const;
  std::chrono::microseconds Ceiling() const;

  UdStreamOptions options_;
  uint32_t base_;              // number of unacked_.front()
  std::deque<Sent> unacked_;   // base_, base_ + 1, ...
  uint32_t acked_beyond_ = 0;  // entries of unacked_ acked by a mask
  uint64_t retransmissions_ = 0;
  std::chrono::microseconds rto_;
  std::chrono::microseconds measured_rto_;  // from the round trips alone, without the timeouts' doubling
  std::optional<std::chrono::microseconds> srtt_;
  std::chrono::microseconds rttvar_{0};
};

// The receiving side of one stream.
class UdReceiveWindow {
 public:
  enum class Verdict {
    kNew,           // place its payload
    kDuplicate,     // held already (a retransmission whose first copy arrived, or a network copy)
    kBeyondWindow,  // further ahead than the sender may be: not from this stream's sender
  };
  explicit UdReceiveWindow(uint32_t window = 256, uint32_t first_seq = 0);

  Verdict Receive(uint32_t seq);
  // What the acknowledgement says: every datagram before next_expected() is held, and
  // next_expected() + 1 + i for each bit i of sack().
  uint32_t next_expected() const { return next_; }
  uint64_t sack() const;
  uint64_t duplicates() const { return duplicates_; }

 private:
  uint32_t window_;
  uint32_t next_;
  std::vector<bool> held_;  // by seq % window_, for seqs in [next_, next_ + window_)
  uint64_t duplicates_ = 0;
};

}  // namespace ohio
