// What the kernel's send copy of a daemon's put costs, by where its bytes come from and how it
// is sent. One connection; every send is of --bytes rewritten just before it, as an SSB half is
// staged anew for every call; three variants interleaved, --sends of each per round:
//   plain       the sender wrote the bytes itself, send();
//   other-core  a helper process pinned to another CPU wrote them (as ranks stage the SSB that
//               ohiod sends), send();
//   zerocopy    the sender wrote them, send(MSG_ZEROCOPY), and waits for the kernel's
//               completion before rewriting them (as ohiod would before reusing a half).
// Per variant, the median over rounds of the sending thread's CPU time and wall time per send,
// and for zerocopy how many sends the kernel completed as copied after all
// (SO_EE_CODE_ZEROCOPY_COPIED: a receiver on the same kernel, as between network namespaces
// over a veth, or a device without scatter-gather).
//
// receiver: tcp_send_probe --listen PORT
// sender:   tcp_send_probe --connect HOST --port PORT [--bytes B] [--sends N] [--rounds R]
// (tests/bench/tcp_send_probe.sh runs both across two network namespaces joined by a veth.)
#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

enum Variant { kPlain, kOtherCore, kZeroCopy, kVariants };
constexpr const char* kNames[kVariants] = {"plain", "other-core", "zerocopy"};

double ThreadCpuUs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

bool PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

int Receive(uint16_t port) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(s, 1) != 0) {
    std::fprintf(stderr, "tcp_send_probe: cannot listen on port %u: %s\n", port, std::strerror(errno));
    return 1;
  }
  const int c = accept(s, nullptr, nullptr);
  std::vector<char> buf(1 << 20);
  uint64_t total = 0;
  ssize_t n;
  while ((n = read(c, buf.data(), buf.size())) > 0) total += static_cast<uint64_t>(n);
  std::printf("received %llu bytes\n", static_cast<unsigned long long>(total));
  return 0;
}

struct Completions {
  uint64_t done = 0;
  uint64_t copied = 0;
};

// Reads zero-copy completions off the error queue until `want` send calls are complete,
// waiting up to 10 s at a time; false if they did not come.
bool ReapUntil(int s, uint64_t want, Completions* c) {
  while (c->done < want) {
    char control[128];
    msghdr m{};
    m.msg_control = control;
    m.msg_controllen = sizeof(control);
    if (recvmsg(s, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
      pollfd p{s, 0, 0};  // POLLERR is always reported
      if (poll(&p, 1, 10000) <= 0) return false;
      continue;
    }
    for (cmsghdr* h = CMSG_FIRSTHDR(&m); h != nullptr; h = CMSG_NXTHDR(&m, h)) {
      const auto* e = reinterpret_cast<const sock_extended_err*>(CMSG_DATA(h));
      if (e->ee_origin != SO_EE_ORIGIN_ZEROCOPY) continue;
      const uint64_t calls = static_cast<uint64_t>(e->ee_data - e->ee_info) + 1;  // a range of send calls
      c->done += calls;
      if ((e->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) != 0) c->copied += calls;
    }
  }
  return true;
}

// The other-core writer: a process that rewrites the buffer whenever the sender asks (state 1)
// and says when it is done (state 2); state 3 ends it.
struct Handshake {
  std::atomic<uint32_t> state{0};
  std::atomic<uint32_t> value{0};
};

[[noreturn]] void Write(uint8_t* buf, uint64_t bytes, Handshake* h) {
  for (;;) {
    uint32_t s;
    while ((s = h->state.load(std::memory_order_acquire)) != 1) {
      if (s == 3) _exit(0);
      sched_yield();
    }
    std::memset(buf, static_cast<int>(h->value.load(std::memory_order_relaxed)), bytes);
    h->state.store(2, std::memory_order_release);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tcp_send_probe: sender CPU per send by where the bytes come from and how they are sent"};
  uint16_t listen_port = 0, port = 5555;
  std::string host;
  uint64_t bytes = 1 << 20;
  uint32_t sends = 200, rounds = 5;
  int sender_cpu = 1, writer_cpu = 0;
  app.add_option("--listen", listen_port, "be the receiver on this port");
  app.add_option("--connect", host, "be the sender to this IPv4 address");
  app.add_option("--port", port, "the receiver's port (sender)");
  app.add_option("--bytes", bytes, "bytes per send")->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30));
  app.add_option("--sends", sends, "sends per round and variant")->check(CLI::Range(1u, 1000000u));
  app.add_option("--rounds", rounds, "interleaved rounds")->check(CLI::Range(1u, 100u));
  app.add_option("--sender-cpu", sender_cpu, "the CPU the sender runs on");
  app.add_option("--writer-cpu", writer_cpu, "the CPU the other-core writer runs on");
  CLI11_PARSE(app, argc, argv);
  if (listen_port != 0) return Receive(listen_port);
  if (host.empty() || sender_cpu == writer_cpu) {
    std::fprintf(stderr, "tcp_send_probe: --listen PORT, or --connect HOST with two different CPUs\n");
    return 2;
  }
  // The buffer and the handshake are shared with the writer process.
  void* shared = mmap(nullptr, bytes + sizeof(Handshake), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    std::fprintf(stderr, "tcp_send_probe: mmap: %s\n", std::strerror(errno));
    return 1;
  }
  auto* buf = static_cast<uint8_t*>(shared);
  auto* hand = new (buf + bytes) Handshake();
  std::memset(buf, 1, bytes);
  const pid_t writer = fork();
  if (writer == 0) {
    // Gone with the sender whatever way it ends (an error return leaves no state 3 behind).
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() == 1 || !PinTo(writer_cpu)) _exit(1);
    Write(buf, bytes, hand);
  }
  if (!PinTo(sender_cpu)) {
    std::fprintf(stderr, "tcp_send_probe: cannot run on CPU %d: %s\n", sender_cpu, std::strerror(errno));
    return 1;
  }
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  if (setsockopt(s, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)) != 0) {
    std::fprintf(stderr, "tcp_send_probe: SO_ZEROCOPY: %s\n", std::strerror(errno));
    return 1;
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1 || connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    std::fprintf(stderr, "tcp_send_probe: cannot connect to %s:%u: %s\n", host.c_str(), port, std::strerror(errno));
    return 1;
  }
  std::vector<double> cpu_us[kVariants], wall_us[kVariants];
  Completions completions;
  uint64_t zerocopy_calls = 0;  // send calls made with MSG_ZEROCOPY: each gets a completion
  uint32_t value = 0;
  for (uint32_t r = 0; r < rounds; ++r) {
    for (int v = 0; v < kVariants; ++v) {
      double cpu = 0, wall = 0;
      for (uint32_t i = 0; i < sends; ++i) {
        ++value;
        if (v == kOtherCore) {
          hand->value.store(value, std::memory_order_relaxed);
          hand->state.store(1, std::memory_order_release);
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
          while (hand->state.load(std::memory_order_acquire) != 2) {
            if (std::chrono::steady_clock::now() > deadline) {
              std::fprintf(stderr, "tcp_send_probe: the writer on CPU %d did not rewrite the bytes within 10 s\n",
                           writer_cpu);
              return 1;
            }
            sched_yield();
          }
        } else {
          std::memset(buf, static_cast<int>(value), bytes);
        }
        const double cpu0 = ThreadCpuUs();
        const auto t0 = std::chrono::steady_clock::now();
        uint64_t off = 0;
        while (off < bytes) {
          const ssize_t n = send(s, buf + off, bytes - off, v == kZeroCopy ? MSG_ZEROCOPY : 0);
          if (n < 0) {
            std::fprintf(stderr, "tcp_send_probe: send: %s\n", std::strerror(errno));
            return 1;
          }
          off += static_cast<uint64_t>(n);
          if (v == kZeroCopy) ++zerocopy_calls;
        }
        // The bytes are rewritten next: with zero-copy, only once the kernel is done with them.
        if (v == kZeroCopy && !ReapUntil(s, zerocopy_calls, &completions)) {
          std::fprintf(stderr, "tcp_send_probe: zero-copy completions did not come within 10 s\n");
          return 1;
        }
        cpu += ThreadCpuUs() - cpu0;
        wall += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      }
      cpu_us[v].push_back(cpu / sends);
      wall_us[v].push_back(wall / sends);
    }
  }
  hand->state.store(3, std::memory_order_release);
  waitpid(writer, nullptr, 0);
  std::printf("bytes per send %llu, %u rounds of %u sends per variant, medians over rounds (the sending thread)\n",
              static_cast<unsigned long long>(bytes), rounds, sends);
  for (int v = 0; v < kVariants; ++v) {
    std::printf("%-10s  %8.1f us CPU  %8.1f us wall per send", kNames[v], Median(cpu_us[v]), Median(wall_us[v]));
    if (v == kZeroCopy) {
      std::printf("  (%llu of %llu send calls completed as copied by the kernel)",
                  static_cast<unsigned long long>(completions.copied), static_cast<unsigned long long>(completions.done));
    }
    std::printf("\n");
  }
  shutdown(s, SHUT_WR);
  close(s);
  return 0;
}
