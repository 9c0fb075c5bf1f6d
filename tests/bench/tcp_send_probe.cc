// What the kernel's send copy of a daemon's put costs, by where its bytes come from and how it
// is sent. One connection; every send is of --bytes rewritten just before it, as an SSB half is
// staged anew for every call; four variants interleaved, --sends of each per round:
//   plain       the sender wrote the bytes itself, send();
//   other-core  a helper process pinned to another CPU wrote them (as ranks stage the SSB that
//               ohiod sends), send();
//   zerocopy    the sender wrote them, send(MSG_ZEROCOPY), and waits for the kernel's
//               completion before rewriting them (as ohiod would before reusing a half);
//   splice      the sender wrote them, vmsplice()s their pages into a pipe and splice()s the
//               pipe into the socket: the pages themselves go to the socket, uncopied (as ohiod
//               could send an SSB half). It measures the cost only: the bytes are rewritten
//               while the socket may still hold their pages.
// Per variant, the median over rounds of the sending thread's CPU time and wall time per send,
// the whole box's busy CPU time per send (where the receiver's and the kernel's share shows),
// and for zerocopy how many sends the kernel completed as copied after all
// (SO_EE_CODE_ZEROCOPY_COPIED: a receiver on the same kernel, as between network namespaces
// over a veth, or a device without scatter-gather). The box figure means something only on a
// box with nothing else running.
//
// receiver: tcp_send_probe --listen PORT
// sender:   tcp_send_probe --connect HOST --port PORT [--bytes B] [--sends N] [--rounds R]
// (tests/bench/tcp_send_probe.sh runs both across two network namespaces joined by a veth.)
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

enum Variant { kPlain, kOtherCore, kZeroCopy, kSplice, kVariants };
constexpr const char* kNames[kVariants] = {"plain", "other-core", "zerocopy", "splice"};

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

// A pipe made as large as an unprivileged process may make it (fs.pipe-max-size, 1 MiB by
// default), so that a splice moves up to that much at once. Its capacity in bytes, or -1 with a
// message.
int OpenLargePipe(int fds[2]) {
  if (pipe(fds) != 0) {
    std::fprintf(stderr, "tcp_send_probe: pipe: %s\n", std::strerror(errno));
    return -1;
  }
  const int capacity = fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
  if (capacity < 0) std::fprintf(stderr, "tcp_send_probe: F_SETPIPE_SZ: %s\n", std::strerror(errno));
  return capacity;
}

// The receiver reads everything the sender sends, with read() or, with `splice_in`, by
// splice()ing the socket into a pipe and reading the pipe (the socket's pages move to the pipe
// uncopied; the read is the one copy). It prints its CPU time per byte received.
int Receive(uint16_t port, bool splice_in) {
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
  int pipe_fds[2] = {-1, -1};
  if (splice_in && OpenLargePipe(pipe_fds) < 0) return 1;
  uint64_t total = 0;
  const double cpu0 = ThreadCpuUs();
  for (;;) {
    ssize_t n;
    if (splice_in) {
      n = splice(c, nullptr, pipe_fds[1], nullptr, buf.size(), SPLICE_F_MOVE);
      for (ssize_t left = n; left > 0;) {
        const ssize_t r = read(pipe_fds[0], buf.data(), static_cast<size_t>(left));
        if (r <= 0) {
          std::fprintf(stderr, "tcp_send_probe: reading the pipe: %s\n", r == 0 ? "end of file" : std::strerror(errno));
          return 1;
        }
        left -= r;
      }
    } else {
      n = read(c, buf.data(), buf.size());
    }
    if (n <= 0) break;
    total += static_cast<uint64_t>(n);
  }
  const double cpu = ThreadCpuUs() - cpu0;
  std::printf("received %llu bytes with %s, %.3f us CPU per KiB\n", static_cast<unsigned long long>(total),
              splice_in ? "splice and read" : "read", total == 0 ? 0.0 : cpu * 1024 / static_cast<double>(total));
  return 0;
}

// Sends `bytes` at `buf` through `pipe_fds` without copying them: their pages go into the pipe
// and from the pipe into the socket, a pipe's capacity at a time. False on an error.
bool SpliceSend(int s, const uint8_t* buf, uint64_t bytes, const int pipe_fds[2], uint64_t pipe_bytes) {
  uint64_t off = 0;
  while (off < bytes) {
    iovec iov{const_cast<uint8_t*>(buf + off), std::min(bytes - off, pipe_bytes)};
    const ssize_t in = vmsplice(pipe_fds[1], &iov, 1, 0);
    if (in <= 0) return false;
    for (ssize_t left = in; left > 0;) {
      const ssize_t out = splice(pipe_fds[0], nullptr, s, nullptr, static_cast<size_t>(left), SPLICE_F_MOVE | SPLICE_F_MORE);
      if (out <= 0) return false;
      left -= out;
    }
    off += static_cast<uint64_t>(in);
  }
  return true;
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

// The other-core writer: a process that rewrites the buffer with each value the sender writes
// to `ask` and answers on `done` once it has. It sleeps in read between requests, so that it
// takes no CPU from the variants that do not use it; end of file on `ask` ends it.
[[noreturn]] void Write(uint8_t* buf, uint64_t bytes, int ask, int done) {
  uint32_t value;
  while (read(ask, &value, sizeof(value)) == static_cast<ssize_t>(sizeof(value))) {
    std::memset(buf, static_cast<int>(value), bytes);
    const char ok = 1;
    if (write(done, &ok, 1) != 1) _exit(1);
  }
  _exit(0);
}

// The whole box's busy CPU time so far, in µs: every CPU's user, nice, system, irq and softirq
// time from /proc/stat. A send's kernel work runs partly in softirq context on whichever CPU
// takes it (over a veth, often the receiver's), so the sending thread's own time alone moves
// with where the kernel happened to do it. /proc/stat counts whole clock ticks (10 ms), so the
// figure means something only when a variant's rounds add up to a second or more.
double BoxBusyUs() {
  FILE* f = std::fopen("/proc/stat", "r");
  if (f == nullptr) return 0;
  unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  const int n = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle, &iowait, &irq,
                            &softirq);
  std::fclose(f);
  if (n != 7) return 0;
  return static_cast<double>(user + nice + system + irq + softirq) * 1e6 / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tcp_send_probe: sender CPU per send by where the bytes come from and how they are sent"};
  uint16_t listen_port = 0, port = 5555;
  std::string host;
  uint64_t bytes = 1 << 20;
  uint32_t sends = 200, rounds = 5;
  int sender_cpu = 1, writer_cpu = 0;
  bool splice_in = false;
  app.add_option("--listen", listen_port, "be the receiver on this port");
  app.add_flag("--splice-receive", splice_in, "receiver: splice the socket into a pipe and read the pipe");
  app.add_option("--connect", host, "be the sender to this IPv4 address");
  app.add_option("--port", port, "the receiver's port (sender)");
  app.add_option("--bytes", bytes, "bytes per send")->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30));
  app.add_option("--sends", sends, "sends per round and variant")->check(CLI::Range(1u, 1000000u));
  app.add_option("--rounds", rounds, "interleaved rounds")->check(CLI::Range(1u, 100u));
  app.add_option("--sender-cpu", sender_cpu, "the CPU the sender runs on");
  app.add_option("--writer-cpu", writer_cpu, "the CPU the other-core writer runs on");
  CLI11_PARSE(app, argc, argv);
  if (listen_port != 0) return Receive(listen_port, splice_in);
  if (host.empty() || sender_cpu == writer_cpu) {
    std::fprintf(stderr, "tcp_send_probe: --listen PORT, or --connect HOST with two different CPUs\n");
    return 2;
  }
  // The buffer is shared with the writer process.
  void* shared = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    std::fprintf(stderr, "tcp_send_probe: mmap: %s\n", std::strerror(errno));
    return 1;
  }
  auto* buf = static_cast<uint8_t*>(shared);
  int ask[2], done[2];
  if (pipe(ask) != 0 || pipe(done) != 0) {
    std::fprintf(stderr, "tcp_send_probe: pipe: %s\n", std::strerror(errno));
    return 1;
  }
  std::memset(buf, 1, bytes);
  const pid_t writer = fork();
  if (writer == 0) {
    // Gone with the sender whatever way it ends, as well as at end of file on `ask`.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() == 1 || !PinTo(writer_cpu)) _exit(1);
    close(ask[1]);
    close(done[0]);
    Write(buf, bytes, ask[0], done[1]);
  }
  // The writer's ends: a writer that died then shows as end of file on `done` at once.
  close(ask[0]);
  close(done[1]);
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
  int pipe_fds[2];
  const int pipe_size = OpenLargePipe(pipe_fds);
  if (pipe_size < 0) return 1;
  std::vector<double> cpu_us[kVariants], wall_us[kVariants];
  double box_us[kVariants] = {};
  Completions completions;
  uint64_t zerocopy_calls = 0;  // send calls made with MSG_ZEROCOPY: each gets a completion
  uint32_t value = 0;
  for (uint32_t r = 0; r < rounds; ++r) {
    for (int v = 0; v < kVariants; ++v) {
      double cpu = 0, wall = 0;
      const double box0 = BoxBusyUs();
      for (uint32_t i = 0; i < sends; ++i) {
        ++value;
        if (v == kOtherCore) {
          pollfd p{done[0], POLLIN, 0};
          char ok;
          if (write(ask[1], &value, sizeof(value)) != static_cast<ssize_t>(sizeof(value)) || poll(&p, 1, 10000) != 1 ||
              read(done[0], &ok, 1) != 1) {
            std::fprintf(stderr, "tcp_send_probe: the writer on CPU %d did not rewrite the bytes within 10 s (or died)\n",
                         writer_cpu);
            return 1;
          }
        } else {
          std::memset(buf, static_cast<int>(value), bytes);
        }
        const double cpu0 = ThreadCpuUs();
        const auto t0 = std::chrono::steady_clock::now();
        if (v == kSplice && !SpliceSend(s, buf, bytes, pipe_fds, static_cast<uint64_t>(pipe_size))) {
          std::fprintf(stderr, "tcp_send_probe: vmsplice/splice: %s\n", std::strerror(errno));
          return 1;
        }
        uint64_t off = v == kSplice ? bytes : 0;
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
      box_us[v] += BoxBusyUs() - box0;
      cpu_us[v].push_back(cpu / sends);
      wall_us[v].push_back(wall / sends);
    }
  }
  close(ask[1]);
  waitpid(writer, nullptr, 0);
  std::printf("bytes per send %llu, %u rounds of %u sends per variant; CPU and wall: the sending thread, medians "
              "over rounds; box CPU: every CPU's busy time over all rounds, the bytes' rewriting included\n",
              static_cast<unsigned long long>(bytes), rounds, sends);
  for (int v = 0; v < kVariants; ++v) {
    std::printf("%-10s  %8.1f us CPU  %8.1f us wall  %8.1f us box CPU per send", kNames[v], Median(cpu_us[v]),
                Median(wall_us[v]), box_us[v] / (static_cast<double>(sends) * rounds));
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
