#include "sim/calibrate.h"

#include <linux/futex.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "shm/plan/exchange_plan.h"
#include "shm/plan/group_shape.h"

namespace ohio::sim {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Aggregate memcpy bandwidth of `threads` threads copying their own buffers at once.
double CopyBandwidth(uint32_t threads, uint64_t bytes, double seconds) {
  std::vector<std::unique_ptr<char[]>> src, dst;
  for (uint32_t t = 0; t < threads; ++t) {
    src.emplace_back(new char[bytes]);
    dst.emplace_back(new char[bytes]);
    std::memset(src.back().get(), 1, bytes);  // touched, so no page faults are timed
    std::memset(dst.back().get(), 2, bytes);
  }
  std::atomic<bool> go{false};
  std::vector<uint64_t> copied(threads, 0);
  std::vector<double> took(threads, 0);
  std::vector<std::thread> pool;
  for (uint32_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      const auto t0 = Clock::now();
      do {
        std::memcpy(dst[t].get(), src[t].get(), bytes);
        copied[t] += bytes;
      } while (Since(t0) < seconds);
      took[t] = Since(t0);
    });
  }
  go = true;
  for (auto& th : pool) th.join();
  double sum = 0;
  for (uint32_t t = 0; t < threads; ++t) sum += copied[t] / took[t];
  return sum;
}

long Futex(std::atomic<uint32_t>* word, int op, uint32_t value) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, nullptr, nullptr, 0);
}

// Half a round trip between two threads that sleep on a futex until woken: a rank waking its
// daemon and the daemon waking it back, as the segment's waits do (shm/futex.cc).
double HandoffLatency(double seconds) {
  std::atomic<uint32_t> turn{0};
  std::atomic<bool> stop{false};
  std::thread peer([&] {
    uint32_t expect = 1;
    while (true) {
      while (turn.load() != expect) {
        if (stop.load()) return;
        Futex(&turn, FUTEX_WAIT_PRIVATE, expect - 1);
      }
      turn.store(expect + 1);
      Futex(&turn, FUTEX_WAKE_PRIVATE, 1);
      expect += 2;
    }
  });
  uint64_t trips = 0;
  const auto t0 = Clock::now();
  uint32_t mine = 0;
  do {
    turn.store(mine + 1);
    Futex(&turn, FUTEX_WAKE_PRIVATE, 1);
    while (turn.load() != mine + 2) Futex(&turn, FUTEX_WAIT_PRIVATE, mine + 1);
    mine += 2;
    ++trips;
  } while (Since(t0) < seconds);
  const double took = Since(t0);
  stop = true;
  turn.store(mine + 1);
  Futex(&turn, FUTEX_WAKE_PRIVATE, 1);
  peer.join();
  return took / trips / 2;
}

// One control-message-sized send and its receive through the kernel: what a daemon pays per
// message on the TCP transport, apart from the network.
double MessageCost(double seconds) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return 0;
  char buf[64] = {};
  uint64_t messages = 0;
  const auto t0 = Clock::now();
  do {
    for (int i = 0; i < 64; ++i) {
      if (write(fds[0], buf, sizeof buf) != sizeof buf || read(fds[1], buf, sizeof buf) != sizeof buf) break;
      ++messages;
    }
  } while (Since(t0) < seconds);
  const double took = Since(t0);
  close(fds[0]);
  close(fds[1]);
  return messages ? took / messages : 0;
}

// Planning one round's puts and deliveries of a node of 16 x 8 (what BeginRound does).
double RoundCost(double seconds) {
  std::vector<uint32_t> rank_node;
  for (uint32_t n = 0; n < 16; ++n) rank_node.insert(rank_node.end(), 8, n);
  const GroupShape shape = GroupShape::Make(16, rank_node).value();
  uint64_t rounds = 0;
  size_t sink = 0;
  const auto t0 = Clock::now();
  do {
    sink += PlanPuts(shape, NodeLevelDesign::kV3, rounds % 16, 4096, 8 << 20).size();
    sink += PlanDeliveries(shape, NodeLevelDesign::kV3, rounds % 16, 4096, 8 << 20).size();
    ++rounds;
  } while (Since(t0) < seconds);
  return sink ? Since(t0) / rounds : 0;
}

}  // namespace

Calibration MeasureCalibration(const CalibrateOptions& o) {
  Calibration c;
  const uint32_t cores = std::max<uint32_t>(1, std::thread::hardware_concurrency());
  const uint32_t threads = o.max_threads ? o.max_threads : cores;
  for (uint32_t t = 1; t <= threads; ++t) c.copy_bandwidth.push_back(CopyBandwidth(t, o.copy_bytes, o.seconds_per_figure));
  c.handoff_latency = HandoffLatency(o.seconds_per_figure);
  c.daemon_message_cost = MessageCost(o.seconds_per_figure);
  c.daemon_round_cost = RoundCost(o.seconds_per_figure);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  c.note = "measured by ohio-sim calibrate on " + std::string(host) + " (" + std::to_string(cores) +
           " cores): copy bandwidth with 1.." + std::to_string(threads) +
           " threads memcpy-ing " + std::to_string(o.copy_bytes >> 20) +
           " MiB buffers; handoff_latency half a futex round trip between two threads; daemon_message_cost a "
           "64-byte write and read over a Unix socket pair; daemon_round_cost PlanPuts + PlanDeliveries of a 16 x 8 "
           "node";
  return c;
}

}  // namespace ohio::sim
