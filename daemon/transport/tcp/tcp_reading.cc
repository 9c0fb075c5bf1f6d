// TcpTransport's frame reader: headers and small payloads through a read-ahead per connection,
// a put's payload straight from the socket into its registered region (or drained when the
// region is gone), a hello checked before anything else is read, a bounded read per pass.
// See tcp_transport.h.
#include "daemon/transport/tcp/tcp_transport.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ohio {
namespace {

constexpr uint32_t kHello = TcpFrameHeader::kHello;
constexpr uint32_t kPut = TcpFrameHeader::kPut;
constexpr uint32_t kMessage = TcpFrameHeader::kMessage;
// What one Poll reads from one connection at most: a large put streaming in must not keep
// the engine from its other groups and connections; the rest is read on the next pass.
constexpr uint64_t kReadBudget = 4 << 20;
constexpr char kProtocolError[] = "protocol error";

}  // namespace

std::string TcpTransport::OnFrameDone(Conn* c) {
  const Frame& f = c->frame;
  TransportEvent e;
  e.peer = c->peer;
  switch (f.type) {
    case kHello: {
      if (c->named) return std::string(kProtocolError) + " (unexpected hello)";
      const std::string hello(reinterpret_cast<const char*>(c->small), f.bytes);
      const auto nul = hello.find('\0');
      const std::string name = hello.substr(0, nul);
      if (name.empty()) return std::string(kProtocolError) + " (a hello naming nobody)";
      if (auth_.check) {
        Status s = auth_.check(name, nul == std::string::npos ? "" : hello.substr(nul + 1), c->from);
        if (!s.ok()) return "refused: " + s.message();
      }
      Established(c, directory_.For(name));
      return "";
    }
    case kPut:
      // A put whose region was gone (or out of bounds) was drained, not delivered.
      if (c->dropped) return "";
      data_frames_received_.fetch_add(1, std::memory_order_relaxed);
      e.kind = TransportEvent::Kind::kArrived;
      e.imm = f.imm;
      e.bytes = f.bytes;
      Emit(std::move(e));
      return "";
    case kMessage:
      control_frames_received_.fetch_add(1, std::memory_order_relaxed);
      e.kind = TransportEvent::Kind::kMessage;
      e.message_bytes = static_cast<uint32_t>(f.bytes);
      std::memcpy(e.message.data(), c->small, f.bytes);
      Emit(std::move(e));
      return "";
  }
  return std::string(kProtocolError) + " (unknown frame type)";
}

int64_t TcpTransport::Take(Conn* c, uint8_t* dst, uint64_t n, uint64_t* budget) {
  if (c->ahead_begin == c->ahead_end) {
    if (c->drained || *budget == 0) return 0;
    c->ahead_begin = c->ahead_end = 0;
    const bool direct = n >= kReadAheadBytes;
    const uint64_t want = std::min<uint64_t>(direct ? n : kReadAheadBytes, *budget);
    // Let this read's acknowledgement wait for data going back. A small frame on a connection
    // that carries nothing back in the same moment (a Bruck step sends one way) is otherwise
    // acknowledged by a packet of its own as soon as the read empties the socket: at 32 x 1 those
    // were a good share of the packets a node sent and of the daemons' CPU (docs/PERFORMANCE.md,
    // "Figures behind constants in the code"). Delayed, the
    // acknowledgement rides on the next frame back, or on every second small frame (TCP's own
    // rule), or on the delayed-ack timer (40 ms, well under the 200 ms retransmit timeout); bulk
    // data is acknowledged every two full segments either way. The kernel leaves this mode on
    // its own (a delayed-ack timer that fired), so it is asked again before every read.
    const int no_quick_ack = 0;
    setsockopt(c->fd, IPPROTO_TCP, TCP_QUICKACK, &no_quick_ack, sizeof(no_quick_ack));
    const ssize_t r = read(c->fd, direct ? dst : c->ahead, want);
    if (r < 0) {
      if (errno != EAGAIN && errno != EINTR) return -1;
      c->drained = errno == EAGAIN;
      return 0;
    }
    if (r == 0) {
      errno = 0;
      return -1;
    }
    if (static_cast<uint64_t>(r) < want) c->drained = true;
    *budget -= std::min<uint64_t>(*budget, static_cast<uint64_t>(r));
    if (direct) return r;
    c->ahead_end = static_cast<uint32_t>(r);
  }
  const uint64_t k = std::min<uint64_t>(n, c->ahead_end - c->ahead_begin);
  std::memcpy(dst, c->ahead + c->ahead_begin, k);
  c->ahead_begin += static_cast<uint32_t>(k);
  return static_cast<int64_t>(k);
}

bool TcpTransport::ReadPayload(Conn* c, uint64_t* budget) {
  const Frame& f = c->frame;
  while (c->payload_got < f.bytes) {
    const uint64_t want = f.bytes - c->payload_got;
    int64_t r;
    if (f.type == kPut) {
      std::lock_guard<std::mutex> lock(regions_mu_);
      auto it = regions_.find(f.key);
      if (it != regions_.end() && f.FitsRegion(it->second.bytes)) {
        r = Take(c, it->second.base + f.offset + c->payload_got, want, budget);
      } else {
        c->dropped = true;
        // A region already closed (its group ended) or out of bounds: drain and drop.
        r = Take(c, discard_.data(), std::min<uint64_t>(want, discard_.size()), budget);
      }
    } else {
      r = Take(c, c->small + c->payload_got, want, budget);
    }
    if (r < 0) return false;
    if (r == 0) break;
    c->payload_got += static_cast<uint64_t>(r);
  }
  return true;
}

void TcpTransport::OnReadable(Conn* c) {
  uint64_t budget = kReadBudget;
  c->drained = false;  // epoll says there is something to read
  for (;;) {
    if (!c->in_payload) {
      const int64_t r = Take(c, reinterpret_cast<uint8_t*>(c->header) + c->header_got, kHeaderBytes - c->header_got,
                             &budget);
      if (r == 0) return FrameLeftOpen(c);
      if (r < 0) return Close(c, errno == 0 ? "closed by the peer" : std::string("read failed: ") + std::strerror(errno));
      c->header_got += static_cast<size_t>(r);
      if (c->header_got < kHeaderBytes) continue;
      if (!c->named && TcpFrameHeader::RawType(c->header) != kHello && auth_.check) {
        // Data before any credential: refused (and counted) like a hello without one.
        Status s = auth_.check("", "", c->from);
        return Close(c, "refused: " + s.message());
      }
      auto f = TcpFrameHeader::Decode(c->header, c->named);
      if (!f.ok()) return CloseMalformed(c, std::string(kProtocolError) + " (" + f.status().message() + ")");
      c->frame = f.value();
      c->header_got = 0;
      c->payload_got = 0;
      c->dropped = false;
      c->in_payload = true;
    }
    if (!ReadPayload(c, &budget)) {
      return Close(c, errno == 0 ? "closed by the peer mid-frame" : std::string("read failed: ") + std::strerror(errno));
    }
    if (c->payload_got < c->frame.bytes) return FrameLeftOpen(c);  // the rest has not come yet (or the budget is spent)
    c->in_payload = false;
    FrameDone(c);
    const std::string why = OnFrameDone(c);
    if (why.rfind(kProtocolError, 0) == 0) return CloseMalformed(c, why);
    if (!why.empty()) return Close(c, why);
  }
}

}  // namespace ohio
