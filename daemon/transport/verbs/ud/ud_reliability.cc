#include "daemon/transport/verbs/ud/ud_reliability.h"

#include <algorithm>

namespace ohio {

UdSendWindow::UdSendWindow(UdStreamOptions options, uint32_t first_seq)
    : options_(options), base_(first_seq), rto_(options.retransmit_after), measured_rto_(options.retransmit_after) {}

void UdSendWindow::Measure(const Sent& s, std::optional<UdClock::time_point> now) {
  // Karn: a datagram sent again says nothing of the round trip (which copy was acknowledged?).
  if (!now || s.resent != 0) return;
  using std::chrono::microseconds;
  const microseconds sample = std::chrono::duration_cast<microseconds>(*now - s.first_sent);
  if (!srtt_) {
    srtt_ = sample;
    rttvar_ = sample / 2;
  } else {
    const microseconds delta = *srtt_ > sample ? *srtt_ - sample : sample - *srtt_;
    rttvar_ = (3 * rttvar_ + delta) / 4;
    srtt_ = (7 * *srtt_ + sample) / 8;
  }
  measured_rto_ = std::min(std::max(options_.retransmit_after, *srtt_ + 4 * rttvar_), Ceiling());
  rto_ = measured_rto_;
}

std::chrono::microseconds UdSendWindow::Ceiling() const {
  // A quarter of the give-up time: a peer must be tried a few times before it is lost.
  return std::max(std::chrono::duration_cast<std::chrono::microseconds>(options_.give_up_after) / 4,
                  options_.retransmit_after);
}

std::chrono::microseconds UdSendWindow::WaitFor(const Sent& s) const {
  return std::min(rto_ * (1u << (s.resent < 6 ? s.resent : 6)), Ceiling());
}

std::optional<uint32_t> UdSendWindow::Send(UdClock::time_point now) {
  if (!HasRoom()) return std::nullopt;
  const uint32_t seq = next_seq();
  unacked_.push_back(Sent{now, now, false});
  return seq;
}

uint32_t UdSendWindow::Acknowledge(uint32_t next_expected, uint64_t sack, std::optional<UdClock::time_point> now) {
  const uint32_t end = next_seq();
  // Datagrams not sent yet cannot be held: the ack is not this stream's.
  if (SeqBefore(end, next_expected)) return 0;
  uint32_t newly = 0;
  // The cumulative part; an ack older than others already applied (acks are reordered too)
  // releases nothing, but its mask may still name datagrams not acknowledged yet.
  while (!unacked_.empty() && SeqBefore(base_, next_expected)) {
    if (!unacked_.front().acked) {
      ++newly;
      Measure(unacked_.front(), now);
    } else {
      --acked_beyond_;
    }
    unacked_.pop_front();
    ++base_;
  }
  for (uint32_t i = 0; i < 64 && sack != 0; ++i, sack >>= 1) {
    if ((sack & 1) == 0) continue;
    const uint32_t seq = next_expected + 1 + i;
    if (SeqBefore(seq, base_) || !SeqBefore(seq, end)) continue;
    Sent& s = unacked_[seq - base_];
    if (s.acked) continue;
    Measure(s, now);
    s.acked = true;
    ++acked_beyond_;
    ++newly;
  }
  DropAckedFront();
  if (newly > 0) rto_ = measured_rto_;  // progress: the timeouts' doubling ends
  return newly;
}

void UdSendWindow::DropAckedFront() {
  while (!unacked_.empty() && unacked_.front().acked) {
    unacked_.pop_front();
    --acked_beyond_;
    ++base_;
  }
}

std::vector<uint32_t> UdSendWindow::DueForRetransmission(UdClock::time_point now) {
  std::vector<uint32_t> due;
  for (size_t i = 0; i < unacked_.size() && due.size() < std::max(1u, options_.retransmit_burst); ++i) {
    Sent& s = unacked_[i];
    if (s.acked || now - s.last_sent < WaitFor(s)) continue;
    s.last_sent = now;
    ++s.resent;
    ++retransmissions_;
    due.push_back(base_ + static_cast<uint32_t>(i));
  }
  // A timeout: the round trip is longer than thought (or the path lost what it carried). Wait
  // longer for everything until an acknowledgement measures it again.
  if (!due.empty()) rto_ = std::min(2 * rto_, Ceiling());
  return due;
}

std::optional<UdClock::time_point> UdSendWindow::NextRetransmission() const {
  std::optional<UdClock::time_point> next;
  for (const Sent& s : unacked_) {
    if (s.acked) continue;
    const UdClock::time_point at = s.last_sent + WaitFor(s);
    if (!next || at < *next) next = at;
  }
  return next;
}

bool UdSendWindow::PeerSilent(UdClock::time_point now) const {
  for (const Sent& s : unacked_) {
    if (!s.acked) return now - s.first_sent >= options_.give_up_after;
  }
  return false;
}

UdReceiveWindow::UdReceiveWindow(uint32_t window, uint32_t first_seq)
    : window_(window), next_(first_seq), held_(window, false) {}

UdReceiveWindow::Verdict UdReceiveWindow::Receive(uint32_t seq) {
  if (SeqBefore(seq, next_)) {
    ++duplicates_;
    return Verdict::kDuplicate;
  }
  if (seq - next_ >= window_) return Verdict::kBeyondWindow;
  const uint32_t slot = seq % window_;
  if (held_[slot]) {
    ++duplicates_;
    return Verdict::kDuplicate;
  }
  held_[slot] = true;
  // Everything held from next_ on is now acknowledged cumulatively; its slots serve the
  // numbers a window ahead.
  while (held_[next_ % window_]) {
    held_[next_ % window_] = false;
    ++next_;
  }
  return Verdict::kNew;
}

uint64_t UdReceiveWindow::sack() const {
  uint64_t mask = 0;
  const uint32_t span = window_ - 1 < 64 ? window_ - 1 : 64;
  for (uint32_t i = 0; i < span; ++i) {
    if (held_[(next_ + 1 + i) % window_]) mask |= uint64_t{1} << i;
  }
  return mask;
}

}  // namespace ohio
