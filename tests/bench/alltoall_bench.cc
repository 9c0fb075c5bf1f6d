// osu-style alltoall latency through ohiod on one node. Forks --ranks processes that join one
// group and time ohio_alltoall for each size; in the same run the same processes time the
// copy limit: a plain memcpy of the bytes a rank moves (its P·M send buffer in, P·M out).
// Prints per size the average, min and max latency over ranks and the ratio to the memcpy.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "client/ohio.hpp"

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("ohio_alltoall_bench: alltoall latency through ohiod on one node, with a memcpy baseline");
  std::string socket, algorithm;
  uint32_t ranks = 4, iterations = 0;
  uint64_t min_bytes = 1, max_bytes = 1 << 20;
  app.add_option("--socket", socket, "ohiod's socket (default: $OHIO_SOCKET, else /run/ohio/ohiod.sock)");
  app.add_option("--ranks", ranks, "rank processes on this node")->check(CLI::Range(1u, 256u))->capture_default_str();
  app.add_option("--min-bytes", min_bytes, "smallest bytes per rank")->capture_default_str();
  app.add_option("--max-bytes", max_bytes, "largest bytes per rank (sizes double)")->capture_default_str();
  app.add_option("--iterations", iterations, "timed calls per size (default: 1000 up to 4 KiB, 200 up to 64 KiB, 50 above)");
  app.add_option("--algorithm", algorithm, "v1, v2 or v3 (default: the daemon's)");
  CLI11_PARSE(app, argc, argv);

  std::vector<uint64_t> sizes;
  for (uint64_t m = std::max<uint64_t>(min_bytes, 1); m <= max_bytes; m *= 2) sizes.push_back(m);
  if (sizes.empty()) {
    std::fprintf(stderr, "no sizes between --min-bytes and --max-bytes\n");
    return 2;
  }
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
