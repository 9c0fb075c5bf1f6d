// osu-style alltoall latency through ohiod.
//
// One node (--socket, --ranks): forks --ranks processes that join one group and time
// ohio_alltoall for each size; in the same run the same processes time the copy limit: a plain
// memcpy of the bytes a rank moves (its P·M send buffer in, P·M out). Prints per size the
// average, min and max latency over ranks and the ratio to the memcpy.
//
// Several nodes (--sockets, one ohiod per node, --ppn ranks on each): rank g runs on node g/PPN
// and talks to that node's daemon. Each algorithm of --algorithms gets its own group (the name
// alltoallv: a group of the daemon's default algorithm calling ohio_alltoallv with every count = M,
// the same bytes as an alltoall), and beside
// them the same processes run the baseline an MPI library would: a flat pairwise alltoall over
// TCP directly between the rank processes, one connection per pair of ranks on different nodes.
// All methods are timed in the same run, interleaved per size, so that drift on a loaded box hits
// them alike; the first and last call of every method and size are verified byte for byte.
// Beside the latency, every method and size window reports what it cost: CPU time and context
// switches of every rank and (with --daemon-pids) every daemon, packets each node sent on its
// veth (with --rank-netns) and the daemons' transport frames (with --ohioctl, where the daemon
// counts them); --csv writes the table as CSV too.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "client/libohio/ohio.hpp"
#include "tests/bench/proc_usage.h"

namespace {

struct Sample {
  double ohio_us;
  double memcpy_us;
};

uint32_t IterationsFor(uint64_t bytes, uint32_t requested) {
  if (requested != 0) return requested;
  if (bytes <= 4096) return 1000;
  if (bytes <= 65536) return 200;
  return 50;
}

// The --algorithms entry that times ohio_alltoallv instead of an alltoall algorithm.
bool IsVector(const std::string& algorithm) { return algorithm == "alltoallv"; }

double Elapsed(std::chrono::steady_clock::time_point since, uint32_t n) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - since).count() / n;
}

// One rank: returns 0 on success; writes its per-size samples to samples[size_index].
int RunRank(const std::string& socket, const unsigned char (&key)[OHIO_KEY_BYTES], uint32_t ranks, uint32_t rank,
            const std::string& algorithm, const std::vector<uint64_t>& sizes, uint32_t iterations,
            Sample* samples) {
  ohio::Client client;
  ohio::CallResult r = ohio::Client::Connect(socket, &client);
  if (!r.ok()) {
    std::fprintf(stderr, "rank %u: %s\n", rank, r.message.c_str());
    return 1;
  }
  ohio::Group group;
  r = client.Join(key, rank, {client.node_name()}, std::vector<uint32_t>(ranks, 0), algorithm, &group);
  if (!r.ok()) {
    std::fprintf(stderr, "rank %u: join: %s\n", rank, r.message.c_str());
    return 1;
  }
  const uint64_t largest = sizes.back() * ranks;
  std::vector<uint8_t> send(largest, static_cast<uint8_t>(rank)), recv(largest), scratch(largest);
  for (size_t i = 0; i < sizes.size(); ++i) {
    const uint64_t m = sizes[i];
    const uint32_t n = IterationsFor(m, iterations);
    for (uint32_t w = 0; w < std::max(n / 10, 2u); ++w) {
      if (!(r = group.Alltoall(send.data(), recv.data(), m)).ok()) break;
    }
    auto start = std::chrono::steady_clock::now();
    for (uint32_t it = 0; it < n && r.ok(); ++it) r = group.Alltoall(send.data(), recv.data(), m);
    if (!r.ok()) {
      std::fprintf(stderr, "rank %u: alltoall of %lu bytes: %s\n", rank, static_cast<unsigned long>(m),
                   r.message.c_str());
      return 1;
    }
    samples[i].ohio_us = Elapsed(start, n);
    // Start the copy baseline together: one more alltoall is the barrier.
    group.Alltoall(send.data(), recv.data(), 1);
    start = std::chrono::steady_clock::now();
    for (uint32_t it = 0; it < n; ++it) {
      std::memcpy(scratch.data(), send.data(), m * ranks);
      std::memcpy(recv.data(), scratch.data(), m * ranks);
      asm volatile("" : : "r"(recv.data()) : "memory");  // keep the copies
    }
    samples[i].memcpy_us = Elapsed(start, n);
    group.Alltoall(send.data(), recv.data(), 1);
  }
  return group.Leave().ok() ? 0 : 1;
}

int RunSingleNode(const std::string& socket, uint32_t ranks, const std::string& algorithm,
                  const std::vector<uint64_t>& sizes, uint32_t iterations) {
  unsigned char key[OHIO_KEY_BYTES];
  std::random_device rd;
  for (auto& b : key) b = static_cast<unsigned char>(rd());

  const size_t table_bytes = sizeof(Sample) * sizes.size() * ranks;
  auto* table = static_cast<Sample*>(mmap(nullptr, table_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (table == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  std::vector<pid_t> children;
  for (uint32_t r = 0; r < ranks; ++r) {
    pid_t pid = fork();
    if (pid == 0) _exit(RunRank(socket, key, ranks, r, algorithm, sizes, iterations, table + r * sizes.size()));
    children.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : children) {
    int st = 0;
    waitpid(pid, &st, 0);
    failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  if (failed != 0) {
    std::fprintf(stderr, "%d of %u ranks failed\n", failed, ranks);
    return 1;
  }
  std::printf("# ohio alltoall, %u ranks on one node through ohiod, algorithm %s\n", ranks,
              algorithm.empty() ? "(daemon default)" : algorithm.c_str());
  std::printf("# latency per call, averaged over calls and ranks; memcpy = the same ranks copying their\n"
              "# P*M bytes in and out with plain memcpy, in the same run\n");
  std::printf("%-10s %12s %12s %12s %12s %12s\n", "bytes", "ohio_avg_us", "ohio_min_us", "ohio_max_us",
              "memcpy_us", "ohio/memcpy");
  for (size_t i = 0; i < sizes.size(); ++i) {
    double sum = 0, lo = 1e300, hi = 0, copy = 0;
    for (uint32_t r = 0; r < ranks; ++r) {
      const Sample& s = table[r * sizes.size() + i];
      sum += s.ohio_us;
      lo = std::min(lo, s.ohio_us);
      hi = std::max(hi, s.ohio_us);
      copy += s.memcpy_us;
    }
    const double avg = sum / ranks;
    copy /= ranks;
    std::printf("%-10lu %12.2f %12.2f %12.2f %12.2f %12.2f\n", static_cast<unsigned long>(sizes[i]), avg, lo, hi,
                copy, copy > 0 ? avg / copy : 0.0);
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Several nodes.

using Clock = std::chrono::steady_clock;
using Key = std::array<unsigned char, OHIO_KEY_BYTES>;

// Multi-node runs cross (emulated) networks on an oversubscribed box: calls cost milliseconds,
// so fewer of them keep a full size sweep within a couple of minutes.
uint32_t MultiNodeIterationsFor(uint64_t bytes, uint32_t requested) {
  if (requested != 0) return requested;
  if (bytes <= 4096) return 500;
  if (bytes <= 65536) return 100;
  return 50;
}

uint8_t Pattern(uint32_t src, uint32_t dst, uint64_t i, uint32_t salt) {
  return static_cast<uint8_t>(src * 131u + dst * 31u + i * 7u + salt * 13u + (i >> 8));
}

struct Cluster {
  std::vector<std::string> sockets;  // per node
  std::vector<std::string> names;    // per node, as its daemon calls itself
  std::vector<std::string> hosts;    // per node: the address its ranks' flat baseline listens on
  std::vector<std::string> netns;    // per node, or empty: the network namespace its ranks enter
  std::vector<pid_t> daemon_pids;     // per node, or empty: its ohiod, whose CPU time counts too
  std::vector<std::string> admin_sockets;  // per node, for --ohioctl
  std::string ohioctl;                // empty, or how to read the daemons' transport frames
  uint32_t ppn = 0;
  uint32_t ranks() const { return static_cast<uint32_t>(sockets.size()) * ppn; }
  uint32_t NodeOf(uint32_t rank) const { return rank / ppn; }
};

struct Plan {
  std::vector<std::string> algorithms;
  std::vector<Key> keys;  // one fresh group per algorithm
  std::vector<uint64_t> sizes;
  std::vector<uint32_t> iterations;  // per size, timed calls per method
  uint32_t rounds = 5;
  uint16_t flat_port_base = 0;
  std::chrono::milliseconds timeout{30000};
  bool daemon_frames = false;  // every daemon's counters have data_frames_sent
  std::string csv;
  // Columns: the ohio algorithms, then these two.
  size_t flat() const { return algorithms.size(); }
  size_t copy() const { return algorithms.size() + 1; }
  size_t methods() const { return algorithms.size() + 2; }
  uint32_t PerRound(size_t size_index) const { return (iterations[size_index] + rounds - 1) / rounds; }
  uint32_t WarmUps(size_t size_index) const { return std::max(iterations[size_index] / 10, 2u); }
};

// What one process (a rank, or a node: its daemon and its veth) spent in one method's timed
// windows of one size, summed over the rounds; -1: could not be read.
struct Cost {
  double cpu_us = 0, ctx_switches = 0, tx_packets = 0, daemon_frames = 0;
};

// Counters written by one rank and polled by others sit on their own cache lines, so that
// ranks spinning on one do not slow the writer of its neighbour.
struct alignas(64) Counter {
  std::atomic<uint64_t> v{0};
};

// Everything the forked processes share: one MAP_SHARED mapping made before fork.
class Shared {
 public:
  static Shared* Create(const Cluster& c, const Plan& p) {
    Layout l;
    size_t at = 0;
    auto take = [&at](size_t bytes) {
      const size_t off = at;
      at += (bytes + 63) & ~size_t{63};
      return off;
    };
    l.ranks = c.ranks();
    l.sizes = p.sizes.size();
    l.methods = p.methods();
    take(sizeof(Shared));
    l.ports = take(sizeof(Counter) * l.ranks);
    l.posted = take(sizeof(Counter) * l.ranks);
    l.delivered = take(sizeof(Counter) * l.ranks * l.ranks);
    l.heartbeat = take(sizeof(Counter) * l.ranks);
    l.samples = take(sizeof(double) * l.ranks * l.sizes * l.methods);
    l.slots = l.ranks + c.sockets.size();
    l.costs = take(sizeof(Cost) * l.slots * l.sizes * l.methods);
    l.recv_stride = p.sizes.back() * l.ranks;
    l.recv = take(l.recv_stride * l.ranks);
    void* mem = mmap(nullptr, at, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return nullptr;
    auto* s = new (mem) Shared(l);
    for (uint64_t g = 0; g < l.ranks; ++g) {
      new (s->At<Counter>(l.ports) + g) Counter();
      new (s->At<Counter>(l.posted) + g) Counter();
      new (s->At<Counter>(l.heartbeat) + g) Counter();
      for (uint64_t h = 0; h < l.ranks; ++h) new (s->At<Counter>(l.delivered) + g * l.ranks + h) Counter();
    }
    for (uint64_t i = 0; i < l.slots * l.sizes * l.methods; ++i) new (s->At<Cost>(l.costs) + i) Cost();
    return s;
  }

  std::atomic<uint64_t>& port(uint32_t rank) { return At<Counter>(l_.ports)[rank].v; }
  // The flat call `rank` has entered: its receive buffer may take that call's blocks.
  std::atomic<uint64_t>& posted(uint32_t rank) { return At<Counter>(l_.posted)[rank].v; }
  // The flat call whose block src -> dst has been copied into dst's receive buffer.
  std::atomic<uint64_t>& delivered(uint32_t src, uint32_t dst) {
    return At<Counter>(l_.delivered)[src * l_.ranks + dst].v;
  }
  std::atomic<uint64_t>& heartbeat(uint32_t rank) { return At<Counter>(l_.heartbeat)[rank].v; }
  std::atomic<uint64_t>& sizes_done() { return sizes_done_.v; }
  double& sample(uint32_t rank, size_t size, size_t method) {
    return At<double>(l_.samples)[(rank * l_.sizes + size) * l_.methods + method];
  }
  // Slots 0..P-1 are the ranks, P + n is node n.
  Cost& cost(uint64_t slot, size_t size, size_t method) {
    return At<Cost>(l_.costs)[(slot * l_.sizes + size) * l_.methods + method];
  }
  // The flat baseline's receive buffers are shared so that a rank on the same node copies its
  // block straight in: one memcpy, the single-copy path MPI libraries use within a node.
  uint8_t* flat_recv(uint32_t rank) { return At<uint8_t>(l_.recv) + rank * l_.recv_stride; }

  // Every rank of the run arrives before any leaves, or the deadline passes (false).
  bool Barrier(Clock::time_point deadline) {
    const uint64_t gen = barrier_gen_.v.load(std::memory_order_acquire);
    if (barrier_count_.v.fetch_add(1, std::memory_order_acq_rel) + 1 == l_.ranks) {
      barrier_count_.v.store(0, std::memory_order_relaxed);
      barrier_gen_.v.fetch_add(1, std::memory_order_release);
      return true;
    }
    while (barrier_gen_.v.load(std::memory_order_acquire) == gen) {
      if (Clock::now() > deadline) return false;
      usleep(20);
    }
    return true;
  }

 private:
  // Offsets from the start of the mapping, where this object sits.
  struct Layout {
    size_t ports = 0, posted = 0, delivered = 0, heartbeat = 0, samples = 0, costs = 0, recv = 0;
    uint64_t recv_stride = 0, ranks = 0, slots = 0, sizes = 0, methods = 0;
  };
  explicit Shared(const Layout& l) : l_(l) {}
  template <typename T>
  T* At(size_t offset) {
    return reinterpret_cast<T*>(reinterpret_cast<uint8_t*>(this) + offset);
  }

  const Layout l_;
  Counter barrier_count_, barrier_gen_, sizes_done_;
};

// Spins (yielding the core: the box is oversubscribed) until done() or the deadline.
bool SpinUntil(const std::function<bool()>& done, Clock::time_point deadline) {
  for (uint32_t i = 0;; ++i) {
    if (done()) return true;
    if ((i & 63) == 0 && Clock::now() > deadline) return false;
    sched_yield();
  }
}

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

int MillisLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1000));
}

bool WaitFd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p = {fd, events, 0};
    int n = poll(&p, 1, MillisLeft(deadline));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
    if (Clock::now() > deadline) return false;
  }
}

bool WriteAll(int fd, const void* data, size_t bytes, Clock::time_point deadline) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    ssize_t n = send(fd, p, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!WaitFd(fd, POLLOUT, deadline)) return false;
    } else {
      return false;
    }
  }
  return true;
}

bool ReadAll(int fd, void* data, size_t bytes, Clock::time_point deadline) {
  auto* p = static_cast<uint8_t*>(data);
  while (bytes > 0) {
    ssize_t n = recv(fd, p, bytes, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!WaitFd(fd, POLLIN, deadline)) return false;
    } else {
      return false;
    }
  }
  return true;
}

// The flat pairwise alltoall an MPI library runs over TCP: every rank is connected to every
// rank on another node; in step k a rank sends to rank+k and receives from rank-k, so in each
// step all ranks pair up and both directions of a step progress together.
class FlatAlltoall {
 public:
  FlatAlltoall(const Cluster& c, const Plan& p, Shared* s, uint32_t me)
      : c_(c), plan_(p), s_(s), me_(me), fd_(c.ranks(), -1) {}
  ~FlatAlltoall() {
    for (int fd : fd_) {
      if (fd >= 0) close(fd);
    }
  }

  // Listens on this node's host, dials every higher remote rank and accepts every lower one.
  bool Connect(std::string* error) {
    const Clock::time_point deadline = Clock::now() + plan_.timeout;
    const uint32_t P = c_.ranks();
    const std::string& host = c_.hosts[c_.NodeOf(me_)];
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (lfd < 0) return Fail(error, Errno("socket"));
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(plan_.flat_port_base == 0 ? 0 : static_cast<uint16_t>(plan_.flat_port_base + me_));
    if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
      close(lfd);
      return Fail(error, "rank host '" + host + "' is not an IPv4 address");
    }
    if (bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(lfd, 4096) != 0) {
      std::string why = Errno(("listen on " + host + ":" + std::to_string(ntohs(addr.sin_port))).c_str());
      close(lfd);
      return Fail(error, why);
    }
    socklen_t len = sizeof(addr);
    getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len);
    s_->port(me_).store(ntohs(addr.sin_port), std::memory_order_release);

    // The lower rank of a pair dials, so a pair never ends up with two connections.
    for (uint32_t h = me_ + 1; h < P; ++h) {
      if (Local(h)) continue;
      if (!SpinUntil([&] { return s_->port(h).load(std::memory_order_acquire) != 0; }, deadline)) {
        close(lfd);
        return Fail(error, "rank " + std::to_string(h) + " never started listening");
      }
      std::string why;
      if (!Dial(h, deadline, &why)) {
        close(lfd);
        return Fail(error, why);
      }
    }
    uint32_t expected = 0;
    for (uint32_t h = 0; h < me_; ++h) expected += !Local(h);
    for (uint32_t got = 0; got < expected;) {
      if (!WaitFd(lfd, POLLIN, deadline)) {
        close(lfd);
        return Fail(error, "only " + std::to_string(got) + " of " + std::to_string(expected) +
                               " lower remote ranks connected in time");
      }
      int fd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) continue;
      uint32_t h = 0;
      if (!ReadAll(fd, &h, sizeof(h), deadline) || h >= me_ || Local(h) || fd_[h] >= 0) {
        close(fd);
        close(lfd);
        return Fail(error, "bad hello on an accepted connection");
      }
      fd_[h] = fd;
      ++got;
    }
    close(lfd);
    for (int fd : fd_) {
      if (fd >= 0) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    return true;
  }

  // One alltoall of m bytes per rank from send into Shared::flat_recv(me).
  bool Run(const uint8_t* send, uint64_t m, std::string* error) {
    const uint64_t call = ++calls_;
    const Clock::time_point deadline = Clock::now() + plan_.timeout;
    const uint32_t P = c_.ranks();
    uint8_t* recv = s_->flat_recv(me_);
    s_->posted(me_).store(call, std::memory_order_release);
    std::memcpy(recv + me_ * m, send + me_ * m, m);
    for (uint32_t k = 1; k < P; ++k) {
      const uint32_t dst = (me_ + k) % P, src = (me_ + P - k) % P;
      if (Local(dst)) {
        if (!SpinUntil([&] { return s_->posted(dst).load(std::memory_order_acquire) >= call; }, deadline)) {
          return Fail(error, Stuck("rank " + std::to_string(dst) + " to start the call", m));
        }
        std::memcpy(s_->flat_recv(dst) + me_ * m, send + dst * m, m);
        s_->delivered(me_, dst).store(call, std::memory_order_release);
      }
      std::string why;
      if (!Exchange(Local(dst) ? -1 : fd_[dst], send + dst * m, Local(src) ? -1 : fd_[src], recv + src * m, m,
                    deadline, &why)) {
        return Fail(error, "flat alltoall of " + std::to_string(m) + " bytes, sending to rank " + std::to_string(dst) +
                               " and receiving from rank " + std::to_string(src) + ": " + why);
      }
      if (Local(src) &&
          !SpinUntil([&] { return s_->delivered(src, me_).load(std::memory_order_acquire) >= call; }, deadline)) {
        return Fail(error, Stuck("rank " + std::to_string(src) + "'s block", m));
      }
    }
    return true;
  }

 private:
  bool Local(uint32_t rank) const { return c_.NodeOf(rank) == c_.NodeOf(me_); }

  static bool Fail(std::string* error, const std::string& why) {
    *error = why;
    return false;
  }

  std::string Stuck(const std::string& what, uint64_t m) const {
    return "flat alltoall of " + std::to_string(m) + " bytes: waited " + std::to_string(plan_.timeout.count()) +
           " ms for " + what;
  }

  bool Dial(uint32_t h, Clock::time_point deadline, std::string* error) {
    const std::string& host = c_.hosts[c_.NodeOf(h)];
    const std::string where = host + ":" + std::to_string(s_->port(h).load());
    sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(s_->port(h).load()));
    if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) return Fail(error, "bad rank host '" + host + "'");
    for (;;) {
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      if (fd < 0) return Fail(error, Errno("socket"));
      int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
      int err = rc == 0 ? 0 : errno;
      if (err == EINPROGRESS) {
        if (!WaitFd(fd, POLLOUT, deadline)) {
          close(fd);
          return Fail(error, "connecting to rank " + std::to_string(h) + " at " + where + " timed out");
        }
        socklen_t len = sizeof(err);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      }
      if (err == 0) {
        if (!WriteAll(fd, &me_, sizeof(me_), deadline)) {
          close(fd);
          return Fail(error, "hello to rank " + std::to_string(h) + " failed");
        }
        fd_[h] = fd;
        return true;
      }
      close(fd);
      if (Clock::now() > deadline) {
        return Fail(error, "cannot connect to rank " + std::to_string(h) + " at " + where + ": " + std::strerror(err));
      }
      usleep(10000);
    }
  }

  // Sends m bytes on sfd and receives m bytes on rfd at once (either may be -1, both may be the
  // same socket), so that neither direction waits for the other to drain.
  bool Exchange(int sfd, const uint8_t* out, int rfd, uint8_t* in, uint64_t m, Clock::time_point deadline,
                std::string* error) const {
    uint64_t sent = sfd < 0 ? m : 0, got = rfd < 0 ? m : 0;
    while (sent < m || got < m) {
      bool progressed = false;
      if (sent < m) {
        ssize_t n = send(sfd, out + sent, m - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
          sent += static_cast<uint64_t>(n);
          progressed = true;
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
          return Fail(error, Errno("send"));
        }
      }
      if (got < m) {
        ssize_t n = recv(rfd, in + got, m - got, MSG_DONTWAIT);
        if (n > 0) {
          got += static_cast<uint64_t>(n);
          progressed = true;
        } else if (n == 0) {
          return Fail(error, "the connection was closed by the other rank");
        } else if (errno != EAGAIN && errno != EINTR) {
          return Fail(error, Errno("recv"));
        }
      }
      if (progressed) continue;
      pollfd p[2];
      nfds_t count = 0;
      if (sent < m) p[count++] = {sfd, POLLOUT, 0};
      if (got < m) {
        if (count == 1 && p[0].fd == rfd) {
          p[0].events |= POLLIN;
        } else {
          p[count++] = {rfd, POLLIN, 0};
        }
      }
      if (Clock::now() > deadline) {
        return Fail(error, "not done within " + std::to_string(plan_.timeout.count()) + " ms");
      }
      if (poll(p, count, MillisLeft(deadline)) < 0 && errno != EINTR) return Fail(error, Errno("poll"));
    }
    return true;
  }

  const Cluster& c_;
  const Plan& plan_;
  Shared* s_;
  uint32_t me_;
  std::vector<int> fd_;  // per rank; -1 for ranks on this node
  uint64_t calls_ = 0;
};

// A node's side of a window, sampled by its first rank: its daemon (0 when no --daemon-pids: not
// counted), the packets its veth sent, its transport's data frames (-1: not known).
struct NodeSample {
  ohio_bench_usage daemon = {0, 0};
  double tx_packets = -1, daemon_frames = -1;
};

NodeSample SampleNode(const Cluster& c, const Plan& p, uint32_t node, bool ohio_method, bool start) {
  NodeSample n;
  // ohioctl is a process and a gRPC call into the daemon: it runs before the start of the
  // window and after its end, outside what the daemon's CPU time is counted over.
  const bool frames = ohio_method && p.daemon_frames;
  if (frames && start) n.daemon_frames = ohio_bench_daemon_frames(c.ohioctl.c_str(), c.admin_sockets[node].c_str());
  if (!c.daemon_pids.empty()) {
    n.daemon = start ? ohio_bench_usage_start(c.daemon_pids[node]) : ohio_bench_usage_end(c.daemon_pids[node]);
  }
  // The rank is in its node's namespace, where the node's end of its veth pair is veth0.
  if (!c.netns.empty()) n.tx_packets = ohio_bench_tx_packets(0, "veth0");
  if (frames && !start) n.daemon_frames = ohio_bench_daemon_frames(c.ohioctl.c_str(), c.admin_sockets[node].c_str());
  return n;
}

void AddNode(Cost* cost, const NodeSample& a, const NodeSample& b) {
  ohio_bench_add(&cost->cpu_us, a.daemon.cpu_us, b.daemon.cpu_us);
  ohio_bench_add(&cost->ctx_switches, a.daemon.ctx_switches, b.daemon.ctx_switches);
  ohio_bench_add(&cost->tx_packets, a.tx_packets, b.tx_packets);
  ohio_bench_add(&cost->daemon_frames, a.daemon_frames, b.daemon_frames);
}

// One rank of a multi-node run; returns 0 when every call worked and every check matched.
int RunClusterRank(const Cluster& c, const Plan& p, Shared* s, uint32_t me) {
  const uint32_t P = c.ranks(), node = c.NodeOf(me);
  const bool internode = me % c.ppn == 0;
  const pid_t self = getpid();
  auto fail = [me](const std::string& why) {
    std::fprintf(stderr, "rank %u: %s\n", me, why.c_str());
    return 1;
  };
  if (!c.netns.empty()) {
    // Only the network namespace changes: the daemons' unix sockets stay reachable by path.
    const std::string path = "/var/run/netns/" + c.netns[node];
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) return fail(Errno(("entering network namespace " + path).c_str()));
    close(fd);
  }
  std::string error;
  FlatAlltoall flat(c, p, s, me);
  if (!flat.Connect(&error)) return fail("flat baseline: " + error);
  s->heartbeat(me).fetch_add(1, std::memory_order_relaxed);

  ohio::Client client;
  ohio::CallResult r = ohio::Client::Connect(c.sockets[node], &client);
  if (!r.ok()) return fail("connect to " + c.sockets[node] + ": " + r.message);
  if (client.node_name() != c.names[node]) {
    return fail("daemon at " + c.sockets[node] + " now calls itself " + client.node_name() + ", not " + c.names[node]);
  }
  std::vector<uint32_t> rank_node(P);
  for (uint32_t g = 0; g < P; ++g) rank_node[g] = c.NodeOf(g);
  std::vector<ohio::Group> groups(p.algorithms.size());
  for (size_t a = 0; a < groups.size(); ++a) {
    unsigned char key[OHIO_KEY_BYTES];
    std::copy(p.keys[a].begin(), p.keys[a].end(), key);
    r = client.Join(key, me, c.names, rank_node, IsVector(p.algorithms[a]) ? "" : p.algorithms[a], &groups[a]);
    if (!r.ok()) return fail("join (" + p.algorithms[a] + "): " + r.message);
    s->heartbeat(me).fetch_add(1, std::memory_order_relaxed);
  }

  const uint64_t largest = p.sizes.back() * P;
  std::vector<uint8_t> send(largest), recv(largest), scratch(largest);
  uint64_t m = 0;
  // alltoallv's counts and displacements: an alltoall's layout.
  std::vector<size_t> counts(P), displs(P);
  // The buffer a method's results land in.
  auto result = [&](size_t method) { return method == p.flat() ? s->flat_recv(me) : recv.data(); };
  auto call = [&](size_t method) -> bool {
    bool ok = true;
    if (method < groups.size() && IsVector(p.algorithms[method])) {
      r = groups[method].Alltoallv(send.data(), counts.data(), displs.data(), recv.data(), counts.data(),
                                   displs.data());
      if (!r.ok()) error = "alltoallv of " + std::to_string(m) + " bytes per rank: " + r.message;
      ok = r.ok();
    } else if (method < groups.size()) {
      r = groups[method].Alltoall(send.data(), recv.data(), m);
      if (!r.ok()) error = "alltoall (" + p.algorithms[method] + ") of " + std::to_string(m) + " bytes: " + r.message;
      ok = r.ok();
    } else if (method == p.flat()) {
      ok = flat.Run(send.data(), m, &error);
    } else {
      std::memcpy(scratch.data(), send.data(), m * P);
      std::memcpy(recv.data(), scratch.data(), m * P);
      asm volatile("" : : "r"(recv.data()) : "memory");  // keep the copies
    }
    s->heartbeat(me).fetch_add(1, std::memory_order_relaxed);
    return ok;
  };
  // A call with a fresh pattern into a poisoned buffer, so stale or misplaced bytes show.
  auto verified = [&](size_t method, uint32_t salt) -> bool {
    for (uint32_t d = 0; d < P; ++d) {
      for (uint64_t i = 0; i < m; ++i) send[d * m + i] = Pattern(me, d, i, salt);
    }
    uint8_t* out = result(method);
    std::memset(out, 0xEE, m * P);
    if (!call(method)) return false;
    for (uint32_t src = 0; src < P; ++src) {
      for (uint64_t i = 0; i < m; ++i) {
        if (out[src * m + i] != Pattern(src, me, i, salt)) {
          error = std::string(method == p.flat() ? "flat" : p.algorithms[method].c_str()) + ": WRONG byte " +
                  std::to_string(i) + " from rank " + std::to_string(src) + ", " + std::to_string(m) +
                  " bytes per rank, " + (salt == 0 ? "first" : "last") + " call: got " +
                  std::to_string(out[src * m + i]) + " want " + std::to_string(Pattern(src, me, i, salt));
          return false;
        }
      }
    }
    return true;
  };
  auto barrier = [&](const char* where) {
    if (s->Barrier(Clock::now() + p.timeout)) return true;
    error = std::string("barrier ") + where + ": not every rank arrived within " + std::to_string(p.timeout.count()) +
            " ms";
    return false;
  };

  const size_t methods = p.methods();
  for (size_t i = 0; i < p.sizes.size(); ++i) {
    m = p.sizes[i];
    for (uint32_t g = 0; g < P; ++g) {
      counts[g] = m;
      displs[g] = g * m;
    }
    const uint32_t per_round = p.PerRound(i);
    for (size_t method = 0; method < methods; ++method) {
      if (method != p.copy() && !verified(method, 0)) return fail(error);
      for (uint32_t w = 0; w < p.WarmUps(i); ++w) {
        if (!call(method)) return fail(error);
      }
    }
    std::vector<double> total_us(methods, 0.0);
    for (uint32_t round = 0; round < p.rounds; ++round) {
      // Rotating the order keeps any one method from always running right after another.
      for (size_t j = 0; j < methods; ++j) {
        const size_t method = (j + round) % methods;
        const bool ohio_method = method < groups.size();
        // The node's window (daemon, veth) spans every rank's: from before the first rank of
        // any node starts to after the last one ends. Nothing else runs in it but barriers.
        const NodeSample node_start = internode ? SampleNode(c, p, node, ohio_method, true) : NodeSample{};
        if (!barrier("before a timed block")) return fail(error);
        const ohio_bench_usage mine_start = ohio_bench_usage_start(self);
        const auto start = Clock::now();
        for (uint32_t it = 0; it < per_round; ++it) {
          if (!call(method)) return fail(error);
        }
        total_us[method] += std::chrono::duration<double, std::micro>(Clock::now() - start).count();
        const ohio_bench_usage mine_end = ohio_bench_usage_end(self);
        Cost& mine = s->cost(me, i, method);
        ohio_bench_add(&mine.cpu_us, mine_start.cpu_us, mine_end.cpu_us);
        ohio_bench_add(&mine.ctx_switches, mine_start.ctx_switches, mine_end.ctx_switches);
        if (!barrier("after a timed block")) return fail(error);
        if (internode) AddNode(&s->cost(P + node, i, method), node_start, SampleNode(c, p, node, ohio_method, false));
      }
    }
    if (!barrier("after the timed blocks")) return fail(error);
    for (size_t method = 0; method < methods; ++method) {
      if (method != p.copy() && !verified(method, 1)) return fail(error);
      s->sample(me, i, method) = total_us[method] / (static_cast<double>(per_round) * p.rounds);
    }
    if (me == 0) s->sizes_done().store(i + 1, std::memory_order_release);
  }
  for (auto& g : groups) {
    r = g.Leave();
    if (!r.ok()) return fail("leave: " + r.message);
  }
  // Nobody closes its connections while another rank may still be reading from them.
  if (!barrier("at the end")) return fail(error);
  return 0;
}

// Waits for the ranks; stops them all when one fails or none made progress for the timeout.
int Supervise(const std::vector<pid_t>& children, Shared* s, const Plan& p) {
  std::vector<bool> running(children.size(), true);
  size_t left = children.size(), failed = 0;
  Clock::time_point first_failure{}, last_progress = Clock::now();
  uint64_t progress = 0, reported = 0;
  const auto started = Clock::now();
  while (left > 0) {
    for (size_t i = 0; i < children.size(); ++i) {
      int st = 0;
      if (!running[i] || waitpid(children[i], &st, WNOHANG) != children[i]) continue;
      running[i] = false;
      --left;
      if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
        if (failed++ == 0) first_failure = Clock::now();
        if (WIFSIGNALED(st)) std::fprintf(stderr, "rank %zu: killed by signal %d\n", i, WTERMSIG(st));
      }
    }
    uint64_t now_progress = 0;
    for (size_t i = 0; i < children.size(); ++i) now_progress += s->heartbeat(static_cast<uint32_t>(i)).load();
    if (now_progress != progress) {
      progress = now_progress;
      last_progress = Clock::now();
    }
    const uint64_t done = s->sizes_done().load();
    if (done != reported) {
      reported = done;
      std::fprintf(stderr, "# %lu bytes done (%.0f s)\n", static_cast<unsigned long>(p.sizes[done - 1]),
                   std::chrono::duration<double>(Clock::now() - started).count());
    }
    // The others notice a dead rank by themselves (group failed, connection closed); give them
    // a moment to say so before stopping them.
    const bool give_up = (failed > 0 && Clock::now() - first_failure > std::chrono::seconds(3)) ||
                         Clock::now() - last_progress > p.timeout + std::chrono::seconds(15);
    if (give_up && left > 0) {
      if (failed == 0) {
        std::fprintf(stderr, "no rank made progress for %lld ms; stopping them\n",
                     static_cast<long long>(p.timeout.count()) + 15000);
      }
      for (size_t i = 0; i < children.size(); ++i) {
        if (running[i]) kill(children[i], SIGKILL);
      }
      for (size_t i = 0; i < children.size(); ++i) {
        if (running[i]) waitpid(children[i], nullptr, 0);  // SIGKILL cannot be ignored: quick
      }
      failed += left;
      left = 0;
    }
    if (left > 0) usleep(20000);
  }
  if (failed != 0) std::fprintf(stderr, "%zu of %zu ranks failed or were stopped\n", failed, children.size());
  return failed == 0 ? 0 : 1;
}

std::string Fmt(double v, int decimals) {
  if (v < 0) return "-";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

// One method and size of a run: the numbers of a row of the table and of the CSV.
struct Row {
  std::string method;
  uint64_t bytes = 0;
  uint32_t calls = 0;
  double latency_us = 0, ratio = -1, cpu_us = 0, ctx_switches = 0, frames = -1, daemon_frames = -1;
};

Row MakeRow(const Cluster& c, const Plan& p, Shared* s, size_t i, size_t method) {
  const uint32_t P = c.ranks();
  const size_t K = c.sockets.size();
  Row row;
  row.method = method < p.algorithms.size() ? p.algorithms[method] : method == p.flat() ? "flat" : "memcpy";
  row.bytes = p.sizes[i];
  row.calls = p.PerRound(i) * p.rounds;
  for (uint32_t g = 0; g < P; ++g) row.latency_us += s->sample(g, i, method) / P;
  double tx = 0, frames = 0;
  for (uint64_t slot = 0; slot < P + K; ++slot) {
    const Cost& cost = s->cost(slot, i, method);
    ohio_bench_add(&row.cpu_us, 0, cost.cpu_us);
    ohio_bench_add(&row.ctx_switches, 0, cost.ctx_switches);
    if (slot >= P) {
      ohio_bench_add(&tx, 0, cost.tx_packets);
      ohio_bench_add(&frames, 0, cost.daemon_frames);
    }
  }
  const double per_call = 1.0 / row.calls;
  if (row.cpu_us >= 0) row.cpu_us *= per_call;
  if (row.ctx_switches >= 0) row.ctx_switches *= per_call;
  if (!c.netns.empty() && tx >= 0) row.frames = tx * per_call / K;
  if (method < p.algorithms.size() && p.daemon_frames && frames >= 0) row.daemon_frames = frames * per_call / K;
  return row;
}

bool PrintClusterTable(const Cluster& c, const Plan& p, Shared* s) {
  const uint32_t P = c.ranks();
  const size_t K = c.sockets.size();
  std::string names, hosts, netns;
  for (size_t n = 0; n < K; ++n) {
    names += " " + c.names[n];
    hosts += " " + c.hosts[n];
    netns += " " + (c.netns.empty() ? std::string("-") : c.netns[n]);
  }
  std::printf("# ohio alltoall across %zu nodes x %u ranks per node (%u rank processes); nodes:%s\n", K, c.ppn, P,
              names.c_str());
  std::printf("# flat baseline ranks listen on:%s; network namespaces:%s\n", hosts.c_str(), netns.c_str());
  std::printf("# All rows come from the same run, interleaved per size: %u rounds, each timing every method\n"
              "# once (order rotated). The first and last call of each method and size were verified.\n",
              p.rounds);
  std::printf("#   flat      flat pairwise alltoall directly between the rank processes: one TCP connection\n"
              "#             per pair of ranks on different nodes ((N-1)*PPN^2 = %u per node), blocks for a\n"
              "#             rank on the same node by one memcpy into its buffer in shared memory\n"
              "#   vN        ohio_alltoall through the node daemons, algorithm vN, one group per algorithm\n"
              "#   alltoallv ohio_alltoallv of the same bytes (every count M), the daemons' default algorithm\n"
              "#   memcpy    each rank copies its P*M bytes into a scratch buffer and out again: the copy\n"
              "#             limit, no network\n",
              static_cast<uint32_t>((K - 1) * c.ppn * c.ppn));
  std::printf("# calls                   timed calls per method and size (per rank)\n"
              "# latency_us              microseconds per call, averaged over the calls and the %u ranks\n"
              "# ratio                   latency_us / flat's latency_us of the same size\n"
              "# cpu_us_per_call         CPU time (user+system) per call in the timed windows, summed over\n"
              "#                         %s\n"
              "# ctx_switches_per_call   voluntary+involuntary context switches, same windows and processes\n"
              "# frames_per_call_per_node  packets a node's veth0 sent in the windows, per call, averaged over\n"
              "#                         the nodes (%s)\n"
              "# daemon_frames_per_call_per_node  data frames a node's ohiod transport sent (%s)\n",
              P,
              c.daemon_pids.empty() ? "the rank processes (daemons not counted: no --daemon-pids)"
                                    : "the rank processes and the ohiod of every node",
              c.netns.empty() ? "-: no network namespaces, no veths" : "inside each node's namespace",
              p.daemon_frames ? "ohioctl counters, data_frames_sent"
                              : "-: no --ohioctl, or its counters have no data_frames_sent");
  std::printf("%-9s %-7s %6s %11s %7s %16s %22s %25s %32s\n", "bytes", "method", "calls", "latency_us", "ratio",
              "cpu_us_per_call", "ctx_switches_per_call", "frames_per_call_per_node",
              "daemon_frames_per_call_per_node");
  FILE* csv = nullptr;
  if (!p.csv.empty()) {
    csv = std::fopen(p.csv.c_str(), "w");
    if (csv == nullptr) {
      std::perror(p.csv.c_str());
      return false;
    }
    std::fprintf(csv,
                 "method,bytes,calls,latency_us,ratio,cpu_us_per_call,ctx_switches_per_call,frames_per_call_per_node,"
                 "daemon_frames_per_call_per_node\n");
  }
  std::vector<size_t> order = {p.flat()};
  for (size_t a = 0; a < p.algorithms.size(); ++a) order.push_back(a);
  order.push_back(p.copy());
  for (size_t i = 0; i < p.sizes.size(); ++i) {
    const double flat_us = MakeRow(c, p, s, i, p.flat()).latency_us;
    for (size_t method : order) {
      Row r = MakeRow(c, p, s, i, method);
      if (method < p.algorithms.size() && flat_us > 0) r.ratio = r.latency_us / flat_us;
      std::printf("%-9lu %-7s %6u %11.2f %7s %16s %22s %25s %32s\n", static_cast<unsigned long>(r.bytes),
                  r.method.c_str(), r.calls, r.latency_us, Fmt(r.ratio, 2).c_str(), Fmt(r.cpu_us, 1).c_str(),
                  Fmt(r.ctx_switches, 2).c_str(), Fmt(r.frames, 2).c_str(), Fmt(r.daemon_frames, 2).c_str());
      if (csv != nullptr) {
        std::fprintf(csv, "%s,%lu,%u,%.3f,%s,%s,%s,%s,%s\n", r.method.c_str(), static_cast<unsigned long>(r.bytes),
                     r.calls, r.latency_us, Fmt(r.ratio, 4).c_str(), Fmt(r.cpu_us, 3).c_str(),
                     Fmt(r.ctx_switches, 3).c_str(), Fmt(r.frames, 3).c_str(), Fmt(r.daemon_frames, 3).c_str());
      }
    }
  }
  if (csv != nullptr && std::fclose(csv) != 0) {
    std::perror(p.csv.c_str());
    return false;
  }
  // What every node must send to the others over the whole run, to hold against link counters.
  double payload = 0;
  for (size_t i = 0; i < p.sizes.size(); ++i) {
    const double calls = p.PerRound(i) * p.rounds + p.WarmUps(i) + 2;
    payload += calls * static_cast<double>(p.algorithms.size() + 1) * static_cast<double>((K - 1) * c.ppn * c.ppn) *
               static_cast<double>(p.sizes[i]);
  }
  std::printf("# payload each node sent to the others in this run (ohio and flat; timed, warm-up and\n"
              "# verified calls): %.1f MiB\n",
              payload / 1048576.0);
  return true;
}

int RunCluster(Cluster c, Plan p) {
  const size_t K = c.sockets.size();
  if (c.hosts.empty()) c.hosts.assign(K, "127.0.0.1");
  if (c.hosts.size() != K) {
    std::fprintf(stderr, "--rank-hosts needs one address per node (%zu), got %zu\n", K, c.hosts.size());
    return 2;
  }
  if (!c.netns.empty() && c.netns.size() != K) {
    std::fprintf(stderr, "--rank-netns needs one namespace per node (%zu), got %zu\n", K, c.netns.size());
    return 2;
  }
  if (!c.daemon_pids.empty() && c.daemon_pids.size() != K) {
    std::fprintf(stderr, "--daemon-pids needs one pid per node (%zu), got %zu\n", K, c.daemon_pids.size());
    return 2;
  }
  for (pid_t pid : c.daemon_pids) {
    if (ohio_bench_cpu_us(pid) < 0 || ohio_bench_ctx_switches(pid) < 0) {
      std::fprintf(stderr, "--daemon-pids: cannot read the CPU time of pid %d from /proc\n", static_cast<int>(pid));
      return 2;
    }
  }
  if (!c.ohioctl.empty()) {
    if (c.admin_sockets.size() != K) {
      std::fprintf(stderr, "--ohioctl needs --admin-sockets, one per node (%zu), got %zu\n", K,
                   c.admin_sockets.size());
      return 2;
    }
    p.daemon_frames = true;
    for (size_t n = 0; n < K && p.daemon_frames; ++n) {
      p.daemon_frames = ohio_bench_daemon_frames(c.ohioctl.c_str(), c.admin_sockets[n].c_str()) >= 0;
    }
    if (!p.daemon_frames) {
      std::fprintf(stderr, "# %s --json counters has no data_frames_sent here: no daemon frame counts\n",
                   c.ohioctl.c_str());
    }
  }
  if (p.flat_port_base != 0 && p.flat_port_base + c.ranks() > 65535) {
    std::fprintf(stderr, "--flat-port-base %u leaves no room for %u ranks\n", p.flat_port_base, c.ranks());
    return 2;
  }
  for (const auto& a : p.algorithms) {
    if (a != "v1" && a != "v2" && a != "v3" && !IsVector(a)) {
      std::fprintf(stderr, "unknown algorithm '%s' (v1, v2, v3 or alltoallv)\n", a.c_str());
      return 2;
    }
  }
  for (size_t n = 0; n < K; ++n) {
    ohio::Client client;
    ohio::CallResult r = ohio::Client::Connect(c.sockets[n], &client);
    if (!r.ok()) {
      std::fprintf(stderr, "node %zu: %s\n", n, r.message.c_str());
      return 1;
    }
    c.names.push_back(client.node_name());
  }
  std::random_device rd;
  p.keys.resize(p.algorithms.size());
  for (auto& key : p.keys) {
    for (auto& b : key) b = static_cast<unsigned char>(rd());
  }
  Shared* s = Shared::Create(c, p);
  if (s == nullptr) {
    std::perror("mmap");
    return 1;
  }
  std::fflush(nullptr);
  const pid_t parent = getpid();
  std::vector<pid_t> children;
  for (uint32_t g = 0; g < c.ranks(); ++g) {
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("fork");
      for (pid_t child : children) kill(child, SIGKILL);
      for (pid_t child : children) waitpid(child, nullptr, 0);
      return 1;
    }
    if (pid == 0) {
      // A rank must not outlive the benchmark (and keep its connections and groups open).
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      _exit(RunClusterRank(c, p, s, g));
    }
    children.push_back(pid);
  }
  if (Supervise(children, s, p) != 0) return 1;
  return PrintClusterTable(c, p, s) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("ohio_alltoall_bench: alltoall latency through ohiod on one node with a memcpy baseline, or across "
               "several nodes' ohiods with a flat pairwise TCP baseline as well");
  std::string socket, algorithm;
  uint32_t ranks = 4, iterations = 0;
  uint64_t min_bytes = 1, max_bytes = 1 << 20;
  Cluster cluster;
  Plan plan;
  uint32_t timeout_s = 30;
  app.add_option("--socket", socket, "ohiod's socket (default: $OHIO_SOCKET, else /run/ohio/ohiod.sock)");
  auto* ranks_opt = app.add_option("--ranks", ranks, "rank processes on this node")
                        ->check(CLI::Range(1u, 256u))
                        ->capture_default_str();
  app.add_option("--min-bytes", min_bytes, "smallest bytes per rank")->capture_default_str();
  app.add_option("--max-bytes", max_bytes, "largest bytes per rank (sizes double)")->capture_default_str();
  app.add_option("--iterations", iterations,
                 "timed calls per size (default: 1000 up to 4 KiB, 200 up to 64 KiB, 50 above; with --sockets "
                 "500, 100 and 50, per method)");
  auto* algorithm_opt = app.add_option("--algorithm", algorithm, "v1, v2 or v3 (default: the daemon's)");
  auto* sockets_opt = app.add_option("--sockets", cluster.sockets,
                                     "one ohiod socket per node, comma-separated: a multi-node run")
                          ->delimiter(',')
                          ->excludes("--socket");
  app.add_option("--ppn", cluster.ppn, "ranks per node with --sockets (default 2)")
      ->check(CLI::Range(1u, 256u))
      ->needs(sockets_opt);
  ranks_opt->excludes(sockets_opt);
  auto* algorithms_opt = app.add_option("--algorithms", plan.algorithms,
                                        "algorithms to compare, comma-separated, one fresh group each (a run as with "
                                        "--sockets; default there: v1,v2,v3); alltoallv: ohio_alltoallv of the "
                                        "same bytes")
                             ->delimiter(',')
                             ->excludes(algorithm_opt);
  app.add_option("--rank-hosts", cluster.hosts,
                 "per node, the IPv4 address its ranks' flat baseline listens on (default 127.0.0.1 for all)")
      ->delimiter(',');
  app.add_option("--rank-netns", cluster.netns,
                 "per node, the network namespace (/var/run/netns/NAME) its rank processes enter")
      ->delimiter(',');
  app.add_option("--daemon-pids", cluster.daemon_pids,
                 "per node, its ohiod's pid: its CPU time and context switches count in every window")
      ->delimiter(',');
  auto* admin_opt =
      app.add_option("--admin-sockets", cluster.admin_sockets, "per node, its ohiod's admin socket (for --ohioctl)")
          ->delimiter(',');
  app.add_option("--ohioctl", cluster.ohioctl,
                 "ohioctl binary: per ohio window, each node's transport data frames (data_frames_sent of "
                 "`ohioctl --json counters`), where the daemon counts them")
      ->needs(admin_opt);
  app.add_option("--csv", plan.csv, "also write the multi-node table to this CSV file");
  app.add_option("--flat-port-base", plan.flat_port_base,
                 "rank g's flat baseline listens on this port + g (default: any free port)");
  app.add_option("--rounds", plan.rounds, "interleaved rounds per size in a multi-node run")
      ->check(CLI::Range(1u, 100u))
      ->capture_default_str();
  app.add_option("--timeout-s", timeout_s, "longest wait for another rank in a multi-node run")
      ->check(CLI::Range(1u, 3600u))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<uint64_t> sizes;
  for (uint64_t m = std::max<uint64_t>(min_bytes, 1); m <= max_bytes; m *= 2) sizes.push_back(m);
  if (sizes.empty()) {
    std::fprintf(stderr, "no sizes between --min-bytes and --max-bytes\n");
    return 2;
  }
  const bool several = !cluster.sockets.empty() || !algorithms_opt->empty();
  if (!several) return RunSingleNode(socket, ranks, algorithm, sizes, iterations);

  if (cluster.sockets.empty()) {
    cluster.sockets = {socket};
    cluster.ppn = ranks;
  } else if (cluster.ppn == 0) {
    cluster.ppn = 2;
  }
  if (plan.algorithms.empty()) {
    plan.algorithms = algorithm.empty() ? std::vector<std::string>{"v1", "v2", "v3"}
                                        : std::vector<std::string>{algorithm};
  }
  plan.sizes = sizes;
  for (uint64_t m : sizes) plan.iterations.push_back(MultiNodeIterationsFor(m, iterations));
  plan.timeout = std::chrono::seconds(timeout_s);
  return RunCluster(std::move(cluster), std::move(plan));
}
