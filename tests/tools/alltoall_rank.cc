// One rank of a test job: joins a group through a real ohiod, runs alltoalls and checks every
// received byte. Prints one line per outcome and exits 0 only if everything matched what the
// test expected (including an expected error code).
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "client/libohio/ohio.hpp"
#include "tests/tools/key_hex.h"

namespace {

uint8_t Pattern(uint32_t src, uint32_t dst, uint64_t i, uint32_t iteration) {
  return static_cast<uint8_t>(src * 131u + dst * 31u + i * 7u + iteration * 13u + (i >> 8));
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Bytes per rank of call `it` of a job run with --random-bytes: the same on every rank (a
// function of the seed and the call only), log-uniform in [0, max] so that one run covers
// eager calls, staged ones and calls of many rounds about equally.
uint64_t RandomBytes(uint64_t seed, uint32_t it, uint64_t max) {
  const uint64_t r = SplitMix64(seed * 0x100000001b3ull + it);
  uint32_t bits = 0;
  while (bits < 63 && (uint64_t{1} << (bits + 1)) <= max) ++bits;  // floor(log2(max))
  const uint32_t e = static_cast<uint32_t>((r >> 32) % (bits + 2));  // 0: M = 0
  if (e == 0) return 0;
  const uint64_t low = uint64_t{1} << (e - 1), high = std::min(max, (uint64_t{1} << e) - 1);
  return low + (r & 0xffffffffu) % (high - low + 1);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("alltoall_rank: one verified rank of a test job");
  std::string socket, key_hex, algorithm, expect, expect_leave;
  uint32_t size = 1, rank = 0, iterations = 1;
  std::vector<uint64_t> sizes = {64};
  std::vector<uint32_t> rank_node;
  std::vector<std::string> nodes;
  uint64_t my_bytes = 0, hint = 0;
  bool stall = false, stall_after = false, in_place = false, old_opt_out_names = false;
  uint32_t pause_after_first_ms = 0;
  int opt_out_at = -1, opted_out_at = -1, null_send_at = -1;
  std::string hold_file, holder_file, selection_to;
  uint64_t random_bytes = 0, seed = 0;
  int cpu = -1;
  app.add_option("--socket", socket)->required();
  app.add_option("--key", key_hex, "32 hex digits")->required();
  app.add_option("--size", size)->required();
  app.add_option("--rank", rank)->required();
  app.add_option("--nodes", nodes, "node names (default: the daemon's own)");
  app.add_option("--rank-node", rank_node, "node index per rank (default: all on node 0)");
  app.add_option("--bytes", sizes, "bytes per rank, one alltoall series per value");
  app.add_option("--iterations", iterations);
  app.add_option("--algorithm", algorithm);
  app.add_option("--hint", hint, "bytes_per_rank_hint of the join (0: the daemon's configured buffers)");
  app.add_option("--my-bytes", my_bytes, "use this bytes per rank instead (to provoke a mismatch)");
  app.add_option("--expect", expect,
                 "the run must end with this error (an ohio_strerror() text); calls before it are verified");
  app.add_option("--expect-leave", expect_leave,
                 "the alltoalls must succeed and the leave end with this error (an ohio_strerror() text)");
  app.add_option("--selection-to", selection_to,
                 "after the join, write the group's selection table (ohio_group_selection) to this file and say "
                 "'selection transport=T'; an error there ends the rank like an alltoall's");
  app.add_flag("--stall", stall, "join, say 'joined', then sleep instead of calling alltoall");
  app.add_flag("--stall-after", stall_after, "after the alltoalls, say 'stalling' and keep the group until killed");
  app.add_flag("--in-place", in_place, "send == recv");
  app.add_option("--pause-after-first-ms", pause_after_first_ms,
                 "after the first alltoall, say 'paused' and sleep this long before the rest");
  app.add_option("--opt-out-at", opt_out_at, "opt out of this iteration's call (ohio_alltoall_opt_out); it must return 'opted out'");
  app.add_flag("--old-opt-out-names", old_opt_out_names,
               "--opt-out-at opts out through ohio_alltoall_skip and expects OHIO_ERR_SKIPPED, the names programs "
               "built against an older ohio.h use");
  app.add_option("--null-send-at", null_send_at,
                 "pass a NULL send buffer to this iteration's call: it must return 'invalid argument' at once "
                 "(and the other ranks 'opted out')");
  app.add_option("--opted-out-at", opted_out_at, "this iteration's call must return 'opted out' (another rank opts out)");
  app.add_option("--hold-after-first", hold_file,
                 "after the first alltoall, say 'holding' and wait (up to 10 minutes) until this file exists");
  app.add_option("--fork-holder", holder_file,
                 "before leaving, fork a child that keeps the group's segment mapped (as a process the rank "
                 "started would) until this file exists (at most 10 minutes); says 'holder PID'");
  app.add_option("--random-bytes", random_bytes,
                 "instead of --bytes: each of the --iterations calls has its own bytes per rank in [0, this], "
                 "drawn from --seed; every exit then says how many calls were verified");
  app.add_option("--seed", seed, "seed of the random sizes and of the byte pattern");
  app.add_option("--cpu", cpu,
                 "run on this CPU only (sched_setaffinity before connecting), as a rank pinned by its launcher: "
                 "ohiod places the group's segment by its ranks' CPUs");
  CLI11_PARSE(app, argc, argv);
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
      std::fprintf(stderr, "rank %u: cannot pin to CPU %d: %s\n", rank, cpu, std::strerror(errno));
      return 2;
    }
  }
  uint32_t verified = 0;
  // Every way out of a --random-bytes run says how many calls it verified, so a soak counts
  // the calls of a job whatever ended it.
  auto report = [&](int code) {
    if (random_bytes != 0) {
      std::printf("rank %u: verified %u calls\n", rank, verified);
      std::fflush(stdout);
    }
    return code;
  };

  unsigned char key[OHIO_KEY_BYTES];
  if (!ParseKey(key_hex, key)) {
    std::fprintf(stderr, "bad --key\n");
    return 2;
  }
  ohio::Client client;
  ohio::CallResult r = ohio::Client::Connect(socket, &client);
  if (!r.ok()) {
    std::printf("rank %u: connect error code=%d (%s) %s\n", rank, r.code, ohio_strerror(r.code), r.message.c_str());
    return report(expect == ohio_strerror(r.code) ? 0 : 1);
  }
  if (nodes.empty()) nodes = {client.node_name()};
  if (rank_node.empty()) rank_node.assign(size, 0);
  ohio::Group group;
  r = client.Join(key, rank, nodes, rank_node, algorithm, &group, hint);
  if (!r.ok()) {
    std::printf("rank %u: join error code=%d (%s) %s\n", rank, r.code, ohio_strerror(r.code), r.message.c_str());
    std::fflush(stdout);
    return report(expect == ohio_strerror(r.code) ? 0 : 1);
  }
  std::printf("rank %u: joined\n", rank);
  std::fflush(stdout);
  if (!selection_to.empty()) {
    std::string table, transport;
    r = group.Selection(&table, &transport);
    if (!r.ok()) {
      std::printf("rank %u: selection error code=%d (%s) %s\n", rank, r.code, ohio_strerror(r.code), r.message.c_str());
      std::fflush(stdout);
      return report(expect == ohio_strerror(r.code) ? 0 : 1);
    }
    std::ofstream(selection_to) << table;
    std::printf("rank %u: selection transport=%s\n", rank, transport.c_str());
    std::fflush(stdout);
  }
  if (stall) {
    for (;;) pause();
  }

  // With a seed, the pattern differs from one job run to the next, so a byte left over from
  // an earlier group cannot pass for a right one.
  const uint32_t salt = static_cast<uint32_t>(SplitMix64(seed));
  if (random_bytes != 0) sizes = {random_bytes};  // one series; each call draws its own M
  std::vector<uint8_t> send, recv;
  for (uint64_t m_agreed : sizes) {
    for (uint32_t it = 0; it < iterations; ++it) {
      const uint64_t m = random_bytes != 0 ? RandomBytes(seed, it, random_bytes) : my_bytes != 0 ? my_bytes : m_agreed;
      const uint32_t stamp = seed != 0 ? it + salt : it;
      send.resize(m * size);
      recv.resize(m * size);
      for (uint32_t d = 0; d < size; ++d) {
        for (uint64_t i = 0; i < m; ++i) send[d * m + i] = Pattern(rank, d, i, stamp);
      }
      std::fill(recv.begin(), recv.end(), 0xEE);
      uint8_t* out = in_place ? send.data() : recv.data();
      if (static_cast<int>(it) == null_send_at) {
        r = group.Alltoall(nullptr, out, m);
        std::printf("rank %u: call %u: code=%d (%s) %s\n", rank, it, r.code, ohio_strerror(r.code), r.message.c_str());
        if (r.code != OHIO_ERR_INVALID_ARGUMENT) return 1;
        continue;  // and the group goes on, verified
      }
      if (static_cast<int>(it) == opt_out_at || static_cast<int>(it) == opted_out_at) {
        if (static_cast<int>(it) != opt_out_at) {
          r = group.Alltoall(send.data(), out, m);
        } else if (old_opt_out_names) {
          r = ohio::CallResult::From(ohio_alltoall_skip(group.get()));
          if (r.code != OHIO_ERR_SKIPPED) return 1;
        } else {
          r = group.OptOut();
        }
        std::printf("rank %u: call %u: code=%d (%s) %s\n", rank, it, r.code, ohio_strerror(r.code), r.message.c_str());
        if (r.code != OHIO_ERR_OPTED_OUT) return 1;
        continue;  // and the group goes on, verified
      }
      r = group.Alltoall(send.data(), out, m);
      if (!r.ok()) {
        std::printf("rank %u: alltoall error code=%d (%s) %s\n", rank, r.code, ohio_strerror(r.code),
                    r.message.c_str());
        std::fflush(stdout);
        if (random_bytes != 0) return report(1);
        if (expect == ohio_strerror(r.code)) {
          if (r.code == OHIO_ERR_SIZE_MISMATCH) {
            // The group must stay usable: one more alltoall at the agreed size must work.
            std::vector<uint8_t> s2(m_agreed * size, 1), r2(m_agreed * size);
            ohio::CallResult again = group.Alltoall(s2.data(), r2.data(), m_agreed);
            std::printf("rank %u: after mismatch %s %s\n", rank, again.ok() ? "ok" : "error", again.message.c_str());
            return again.ok() ? 0 : 1;
          }
          // What leaving the failed group costs and says (the destructor would leave it anyway).
          ohio::CallResult left = group.Leave();
          std::printf("rank %u: leave after the error code=%d (%s) %s\n", rank, left.code, ohio_strerror(left.code),
                      left.message.c_str());
          return 0;
        }
        return 1;
      }
      for (uint32_t s = 0; s < size; ++s) {
        for (uint64_t i = 0; i < m; ++i) {
          if (out[s * m + i] != Pattern(s, rank, i, stamp)) {
            std::printf("rank %u: WRONG byte %lu from rank %u, bytes %lu iteration %u: got %u want %u\n", rank,
                        static_cast<unsigned long>(i), s, static_cast<unsigned long>(m), it, out[s * m + i],
                        Pattern(s, rank, i, stamp));
            return report(1);
          }
        }
      }
      ++verified;
      if (!hold_file.empty() && it == 0 && m_agreed == sizes.front()) {
        std::printf("rank %u: holding\n", rank);
        std::fflush(stdout);
        for (int waited = 0; access(hold_file.c_str(), F_OK) != 0; ++waited) {
          if (waited == 60000) {
            std::printf("rank %u: %s never appeared\n", rank, hold_file.c_str());
            return 1;
          }
          usleep(10000);
        }
      }
      if (pause_after_first_ms > 0 && it == 0 && m_agreed == sizes.front()) {
        std::printf("rank %u: paused\n", rank);
        std::fflush(stdout);
        usleep(pause_after_first_ms * 1000u);
      }
    }
    std::printf("rank %u: ok bytes=%lu iterations=%u\n", rank,
                static_cast<unsigned long>(my_bytes != 0 ? my_bytes : m_agreed), iterations);
  }
  if (!expect.empty()) {
    std::printf("rank %u: expected '%s' but every alltoall succeeded\n", rank, expect.c_str());
    return 1;
  }
  if (stall_after) {
    std::printf("rank %u: stalling\n", rank);
    std::fflush(stdout);
    for (;;) pause();
  }
  if (!holder_file.empty()) {
    const pid_t holder = fork();
    if (holder == 0) {
      for (int waited = 0; waited < 60000 && access(holder_file.c_str(), F_OK) != 0; ++waited) usleep(10000);
      _exit(0);
    }
    std::printf("rank %u: holder %d\n", rank, static_cast<int>(holder));
    std::fflush(stdout);
  }
  r = group.Leave();
  if (!r.ok()) {
    std::printf("rank %u: leave error code=%d (%s) %s\n", rank, r.code, ohio_strerror(r.code), r.message.c_str());
    return report(expect_leave == ohio_strerror(r.code) ? 0 : 1);
  }
  if (!expect_leave.empty()) {
    std::printf("rank %u: expected the leave to fail with '%s' but it succeeded\n", rank, expect_leave.c_str());
    return report(1);
  }
  return report(0);
}
