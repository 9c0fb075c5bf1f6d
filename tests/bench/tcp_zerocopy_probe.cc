// Whether MSG_ZEROCOPY would take the kernel's send copy off a daemon's puts between two hosts:
// one connection, sends of --bytes alternating between plain send() and MSG_ZEROCOPY in
// --rounds interleaved rounds of --sends each, and per mode the median over rounds of the
// sender's CPU and wall time per send, with how many zero-copy completions the kernel marked
// SO_EE_CODE_ZEROCOPY_COPIED (it copied after all: a receiver on the same kernel, as between
// network namespaces over a veth, or a device without scatter-gather). Zero-copy pins the
// buffer's pages until the completion, which is what the daemon would have to wait for before
// reusing an SSB half; this probe waits for each round's completions before the next round.
//
// receiver: tcp_zerocopy_probe --listen PORT
// sender:   tcp_zerocopy_probe --connect HOST --port PORT [--bytes B] [--sends N] [--rounds R]
// (tests/bench/tcp_zerocopy_probe.sh runs both across two network namespaces joined by a veth.)
#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
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

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int Receive(uint16_t port) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(s, 1) != 0) {
    std::fprintf(stderr, "tcp_zerocopy_probe: cannot listen on port %u: %s\n", port, std::strerror(errno));
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

// Reads zero-copy completions off the error queue until `want` sends are complete, waiting up
// to 10 s for each; false if they did not come.
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
      const uint64_t sends = static_cast<uint64_t>(e->ee_data - e->ee_info) + 1;  // a range of send calls
      c->done += sends;
      if ((e->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) != 0) c->copied += sends;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tcp_zerocopy_probe: sender CPU per send with and without MSG_ZEROCOPY, interleaved"};
  uint16_t listen_port = 0, port = 5555;
  std::string host;
  uint64_t bytes = 1 << 20;
  uint32_t sends = 500, rounds = 5;
  app.add_option("--listen", listen_port, "be the receiver on this port");
  app.add_option("--connect", host, "be the sender to this IPv4 address");
  app.add_option("--port", port, "the receiver's port (sender)");
  app.add_option("--bytes", bytes, "bytes per send")->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30));
  app.add_option("--sends", sends, "sends per round and mode")->check(CLI::Range(1u, 1000000u));
  app.add_option("--rounds", rounds, "interleaved rounds per mode")->check(CLI::Range(1u, 100u));
  CLI11_PARSE(app, argc, argv);
  if (listen_port != 0) return Receive(listen_port);
  if (host.empty()) {
    std::fprintf(stderr, "tcp_zerocopy_probe: --listen PORT or --connect HOST\n");
    return 2;
  }
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  if (setsockopt(s, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)) != 0) {
    std::fprintf(stderr, "tcp_zerocopy_probe: SO_ZEROCOPY: %s\n", std::strerror(errno));
    return 1;
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1 || connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    std::fprintf(stderr, "tcp_zerocopy_probe: cannot connect to %s:%u: %s\n", host.c_str(), port, std::strerror(errno));
    return 1;
  }
  std::vector<char> buf(bytes, 7);
  std::vector<double> cpu_us[2], wall_us[2];
  Completions completions;
  uint64_t zerocopy_calls = 0;  // send calls made with MSG_ZEROCOPY: each gets a completion
  for (uint32_t r = 0; r < rounds; ++r) {
    for (int zc = 0; zc < 2; ++zc) {
      const double cpu0 = CpuSeconds();
      const auto t0 = std::chrono::steady_clock::now();
      for (uint32_t i = 0; i < sends; ++i) {
        uint64_t off = 0;
        while (off < bytes) {
          const ssize_t n = send(s, buf.data() + off, bytes - off, zc != 0 ? MSG_ZEROCOPY : 0);
          if (n < 0 && errno == ENOBUFS && zc != 0) {  // too many pinned sends: wait for some
            if (!ReapUntil(s, completions.done + 1, &completions)) break;
            continue;
          }
          if (n < 0) {
            std::fprintf(stderr, "tcp_zerocopy_probe: send: %s\n", std::strerror(errno));
            return 1;
          }
          off += static_cast<uint64_t>(n);
          if (zc != 0) ++zerocopy_calls;
        }
      }
      // The buffer may be reused only once the kernel says so: count that wait in.
      if (zc != 0 && !ReapUntil(s, zerocopy_calls, &completions)) {
        std::fprintf(stderr, "tcp_zerocopy_probe: zero-copy completions did not come within 10 s\n");
        return 1;
      }
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      cpu_us[zc].push_back((CpuSeconds() - cpu0) / sends * 1e6);
      wall_us[zc].push_back(wall / sends * 1e6);
    }
  }
  std::printf("bytes per send %llu, %u rounds of %u sends per mode, medians over rounds (sender only)\n",
              static_cast<unsigned long long>(bytes), rounds, sends);
  std::printf("plain send:   %.1f us CPU, %.1f us wall per send\n", Median(cpu_us[0]), Median(wall_us[0]));
  std::printf("MSG_ZEROCOPY: %.1f us CPU, %.1f us wall per send; %llu of %llu send calls completed as copied by the kernel\n",
              Median(cpu_us[1]), Median(wall_us[1]), static_cast<unsigned long long>(completions.copied),
              static_cast<unsigned long long>(completions.done));
  shutdown(s, SHUT_WR);
  close(s);
  return 0;
}
