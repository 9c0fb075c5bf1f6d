// When this node's daemon took each step of a round spanning nodes, on CLOCK_MONOTONIC, so that
// a rank that reports where its time goes (client/libohio/stage_report.h, OHIO_STAGE_TIMES) can put the
// daemon's steps on its own timeline. The daemon writes them, a few clock reads per round, by
// round parity: a rank reads round k's stamps after its last block landed, while the daemon may
// already stamp k+1 into the other parity.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>

namespace ohio {

struct RoundStamps {
  std::atomic<uint32_t> round;          // the round the stamps below are of; written first
  std::atomic<uint64_t> begun_ns;       // the engine saw every local rank arrive and began it
  std::atomic<uint64_t> posted_ns;      // its last put was posted
  std::atomic<uint64_t> written_ns;     // and its last put completed (TCP: written to the socket)
  std::atomic<uint64_t> landed_ns;      // the last peer block landed and was published
  std::atomic<uint64_t> peers_begun_ns; // the latest begun_ns among the peers (eager headers)
  // Mean over the round's blocks of landed here minus begun on its node: a one-way trip, only
  // meaningful where the nodes share one clock (the emulated cluster on one host).
  std::atomic<uint64_t> trip_ns;
};

inline uint64_t MonotonicNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace ohio
