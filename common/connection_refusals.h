// Connections the data port and the peer port refused or closed without serving them (a host
// over its cap, one that never proved itself in time, garbage, a frame left unfinished), by a
// fixed set of reasons: counted so that a flood shows in the metrics while its log lines are
// rate-limited. Credentials refused are counted apart, by their MUNGE reason
// (daemon/peers/peer_auth.h).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ohio {

enum class ConnectionRefusal {
  kSourceCap,         // refused at accept: its address holds half the unauthenticated limit
  kTotalCap,          // refused at accept: the unauthenticated limit is reached
  kAuthTimeout,       // closed: not authenticated within hello-timeout-ms
  kMalformed,         // closed: its first bytes are no hello of this protocol (data port)
  kFrameTimeout,      // closed: a frame begun and not finished within data-frame-timeout-ms (data port)
  kOutOfDescriptors,  // closed at accept: the daemon had no descriptor to spare
  // Ended, by either end, before any call on it passed the credential check (peer port: gRPC
  // drops a connection that speaks no HTTP/2 at once, and does not say so).
  kClosedUnauthenticated,
};
constexpr size_t kConnectionRefusals = 7;
// The label of the counter: source_cap, total_cap, auth_timeout, malformed, frame_timeout,
// out_of_descriptors, closed_unauthenticated.
const char* ConnectionRefusalName(ConnectionRefusal r);

// Counts by reason; any thread may count or read.
class ConnectionRefusals {
 public:
  using Counts = std::array<uint64_t, kConnectionRefusals>;
  void Count(ConnectionRefusal r, uint64_t n = 1) {
    counts_[static_cast<size_t>(r)].fetch_add(n, std::memory_order_relaxed);
  }
  Counts Read() const {
    Counts out{};
    for (size_t i = 0; i < kConnectionRefusals; ++i) out[i] = counts_[i].load(std::memory_order_relaxed);
    return out;
  }

 private:
  std::array<std::atomic<uint64_t>, kConnectionRefusals> counts_{};
};

}  // namespace ohio
