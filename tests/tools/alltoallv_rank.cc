// One rank of a test job calling ohio_alltoallv: counts drawn per pair and call, or per pair
// once for every call (a quarter of them zero, the same on every rank from the seed), maybe one
// pair skewed to a fixed large count, or every call with the counts of a count matrix file (as
// ohio-sim reads it, so that a simulation and real ranks run the same call), blocks laid out of
// order with gaps on both
// sides, every received byte checked and every gap checked untouched. Exits 0 only if
// everything matched what the test expected (including an expected error). Prints the bytes it
// verified and, of its successful calls, the bytes it sent to and received from other nodes (for
// the daemons' counters).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <unistd.h>

#include "client/libohio/ohio.hpp"
#include "common/mix64.h"
#include "sim/count_matrix.h"
#include "tests/tools/key_hex.h"

namespace {

// Bytes rank `src` sends rank `dst` in call `call`.
size_t Count(uint64_t seed, uint32_t src, uint32_t dst, uint32_t call, size_t max_bytes) {
  const uint64_t h = ohio::Mix64(seed ^ ohio::Mix64(uint64_t{src} << 40 ^ uint64_t{dst} << 20 ^ call));
  return h % 4 == 0 ? 0 : static_cast<size_t>((h >> 8) % (max_bytes + 1));
}

uint8_t Pattern(uint32_t src, uint32_t dst, uint64_t i, uint32_t call) {
  return static_cast<uint8_t>(src * 131u + dst * 31u + i * 7u + call * 13u + (i >> 8));
}

constexpr uint8_t kGap = 0xEE;

// Displacements of `counts` laid out in the order `order`, each block followed by `gap` bytes;
// returns the buffer size.
size_t Lay(const std::vector<size_t>& counts, const std::vector<uint32_t>& order, size_t gap,
           std::vector<size_t>* displs) {
  displs->assign(counts.size(), 0);
  size_t at = gap;
  for (uint32_t j : order) {
    (*displs)[j] = at;
    at += counts[j] + gap;
  }
  return at;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("alltoallv_rank: one verified rank of a test job calling ohio_alltoallv");
  std::string socket, key_hex, expect;
  uint32_t size = 1, rank = 0, calls = 1;
  size_t max_bytes = 4096;
  size_t every_bytes = 0;
  uint64_t seed = 1;
  std::vector<int> mismatch_ranks;
  int large_call = -1;
  size_t large_bytes = 0;
  int large_sender = -1;
  std::string large_expect;
  uint64_t hint = 0;
  size_t alltoall_bytes = 0;
  bool same_counts = false;
  int skew_from = -1, skew_to = -1;
  size_t skew_bytes = 0;
  std::vector<uint32_t> rank_node;
  std::vector<std::string> nodes;
  app.add_option("--socket", socket)->required();
  app.add_option("--key", key_hex, "32 hex digits")->required();
  app.add_option("--size", size)->required();
  app.add_option("--rank", rank)->required();
  app.add_option("--nodes", nodes, "node names (default: the daemon's own)");
  app.add_option("--rank-node", rank_node, "node index per rank (default: all on node 0)");
  app.add_option("--calls", calls);
  app.add_option("--max-bytes", max_bytes, "largest count of a pair");
  app.add_option("--seed", seed);
  app.add_option("--every-bytes", every_bytes, "every pair's count in every call, as an alltoall's (instead of drawn)");
  app.add_option("--mismatch-rank", mismatch_ranks,
                 "in call 0 these ranks expect one byte more from the next rank: every rank must get a size "
                 "mismatch, and the calls after it must work");
  app.add_option("--expect", expect, "every call must fail with this error (ohio_strerror's name)");
  app.add_option("--large-call", large_call, "this call draws counts up to --large-bytes instead");
  app.add_option("--large-bytes", large_bytes);
  app.add_option("--large-sender", large_sender,
                 "in every call this rank's counts are drawn up to --large-bytes instead (its row read in place "
                 "while the others' are staged)");
  app.add_option("--large-expect", large_expect, "the large call must fail with this error (default: succeed)");
  app.add_option("--hint", hint, "bytes_per_rank_hint of the join (0: the configured buffers)");
  app.add_option("--alltoall-bytes", alltoall_bytes,
                 "after every alltoallv, an alltoall of this many bytes per rank, verified (0: none)");
  app.add_flag("--same-counts", same_counts,
               "every call with the counts of call 0 (new data each call), as an application's loop does");
  app.add_option("--skew-from", skew_from, "in every call this rank sends --skew-to --skew-bytes bytes");
  app.add_option("--skew-to", skew_to);
  app.add_option("--skew-bytes", skew_bytes);
  std::string counts_file;
  app.add_option("--counts-file", counts_file,
                 "every call with the counts of this matrix (ohio-sim's count matrix file: row i is what rank i sends)");
  bool stall_after = false;
  app.add_flag("--stall-after", stall_after, "after the calls, say 'stalling' and keep the group until killed");
  CLI11_PARSE(app, argc, argv);
  ohio::sim::CountMatrix matrix;
  if (!counts_file.empty()) {
    auto m = ohio::sim::CountMatrixFrom(counts_file, size);
    if (!m.ok()) {
      std::printf("rank %u: %s\n", rank, m.status().message().c_str());
      return 2;
    }
    matrix = m.value();
  }

  unsigned char key[OHIO_KEY_BYTES];
  if (!ParseKey(key_hex, key)) return 2;
  ohio::Client client;
  ohio::CallResult r = ohio::Client::Connect(socket, &client);
  if (!r.ok()) {
    std::printf("rank %u: connect error %s\n", rank, r.message.c_str());
    return 1;
  }
  if (nodes.empty()) nodes = {client.node_name()};
  if (rank_node.empty()) rank_node.assign(size, 0);
  ohio::Group group;
  r = client.Join(key, rank, nodes, rank_node, "", &group, hint);
  if (!r.ok()) {
    std::printf("rank %u: join error %s\n", rank, r.message.c_str());
    return 1;
  }
  uint64_t verified = 0, remote_sent = 0, remote_received = 0;
  // What the calls that failed on the pair that disagrees put across nodes all the same (their
  // data left before the digests were compared), as the senders' counts say.
  uint64_t failed_remote_sent = 0, failed_remote_received = 0;
  for (uint32_t call = 0; call < calls; ++call) {
    if (call > 0 && alltoall_bytes > 0) {
      std::vector<uint8_t> out(alltoall_bytes * size), in(alltoall_bytes * size);
      for (uint32_t j = 0; j < size; ++j) {
        for (size_t i = 0; i < alltoall_bytes; ++i) out[j * alltoall_bytes + i] = Pattern(rank, j, i, call);
      }
      r = group.Alltoall(out.data(), in.data(), alltoall_bytes);
      if (!r.ok()) {
        std::printf("rank %u: alltoall before call %u: code=%d %s\n", rank, call, r.code, r.message.c_str());
        return 1;
      }
      for (uint32_t s = 0; s < size; ++s) {
        for (size_t i = 0; i < alltoall_bytes; ++i) {
          if (in[s * alltoall_bytes + i] != Pattern(s, rank, i, call)) {
            std::printf("rank %u: WRONG byte %zu from rank %u in the alltoall before call %u\n", rank, i, s, call);
            return 1;
          }
        }
      }
    }
    const bool large = static_cast<int>(call) == large_call;
    const size_t most = large ? large_bytes : max_bytes;
    std::vector<size_t> send_counts(size), recv_counts(size), send_displs, recv_displs;
    std::vector<uint32_t> send_order(size), recv_order(size);
    const uint32_t drawn = same_counts && !large ? 0 : call;
    const auto most_of = [&](uint32_t sender) { return static_cast<int>(sender) == large_sender ? large_bytes : most; };
    for (uint32_t j = 0; j < size; ++j) {
      send_counts[j] = !counts_file.empty() ? matrix.at(rank, j)
                       : every_bytes != 0   ? every_bytes
                                            : Count(seed, rank, j, drawn, most_of(rank));
      recv_counts[j] = !counts_file.empty() ? matrix.at(j, rank)
                       : every_bytes != 0   ? every_bytes
                                            : Count(seed, j, rank, drawn, most_of(j));
      send_order[j] = size - 1 - j;            // last destination first
      recv_order[j] = (rank + 1 + j) % size;  // starting after this rank
    }
    if (skew_from == static_cast<int>(rank) && skew_to >= 0) send_counts[skew_to] = skew_bytes;
    if (skew_to == static_cast<int>(rank) && skew_from >= 0) recv_counts[skew_from] = skew_bytes;
    const bool mismatch = call == 0 && std::find(mismatch_ranks.begin(), mismatch_ranks.end(),
                                                 static_cast<int>(rank)) != mismatch_ranks.end();
    const std::vector<size_t> agreed_recv_counts = recv_counts;
    if (mismatch) recv_counts[(rank + 1) % size] += 1;
    std::vector<uint8_t> send(Lay(send_counts, send_order, 3, &send_displs), kGap);
    std::vector<uint8_t> recv(Lay(recv_counts, recv_order, 5, &recv_displs), kGap);
    for (uint32_t j = 0; j < size; ++j) {
      for (size_t i = 0; i < send_counts[j]; ++i) send[send_displs[j] + i] = Pattern(rank, j, i, call);
    }
    r = group.Alltoallv(send.data(), send_counts.data(), send_displs.data(), recv.data(), recv_counts.data(),
                        recv_displs.data());
    if (!r.ok()) {
      std::printf("rank %u: call %u: code=%d (%s) %s\n", rank, call, r.code, ohio_strerror(r.code), r.message.c_str());
      std::fflush(stdout);
      if (!expect.empty() && expect == ohio_strerror(r.code)) continue;
      if (large && !large_expect.empty() && large_expect == ohio_strerror(r.code)) continue;
      if (call == 0 && !mismatch_ranks.empty() && r.code == OHIO_ERR_SIZE_MISMATCH) {
        for (uint32_t s = 0; s < size; ++s) {
          if (rank_node[s] == rank_node[rank]) continue;
          failed_remote_sent += send_counts[s];
          failed_remote_received += agreed_recv_counts[s];
        }
        continue;
      }
      return 1;
    }
    if (!expect.empty() || (call == 0 && !mismatch_ranks.empty()) || (large && !large_expect.empty())) {
      std::printf("rank %u: call %u succeeded but should have failed\n", rank, call);
      return 1;
    }
    for (uint32_t s = 0; s < size; ++s) {
      for (size_t i = 0; i < recv_counts[s]; ++i) {
        const uint8_t want = Pattern(s, rank, i, call);
        if (recv[recv_displs[s] + i] != want) {
          std::printf("rank %u: WRONG byte %zu from rank %u in call %u: got %u want %u\n", rank, i, s, call,
                      recv[recv_displs[s] + i], want);
          return 1;
        }
      }
      for (size_t g = 0; g < 5; ++g) {
        if (recv[recv_displs[s] + recv_counts[s] + g] != kGap) {
          std::printf("rank %u: the gap after the block of rank %u was written in call %u\n", rank, s, call);
          return 1;
        }
      }
      verified += recv_counts[s];
      if (rank_node[s] != rank_node[rank]) {
        remote_received += recv_counts[s];
        remote_sent += send_counts[s];
      }
    }
  }
  std::printf(
      "rank %u: ok calls=%u verified_bytes=%llu remote_sent_bytes=%llu remote_received_bytes=%llu "
      "failed_remote_sent_bytes=%llu failed_remote_received_bytes=%llu\n",
      rank, calls, static_cast<unsigned long long>(verified), static_cast<unsigned long long>(remote_sent),
      static_cast<unsigned long long>(remote_received), static_cast<unsigned long long>(failed_remote_sent),
      static_cast<unsigned long long>(failed_remote_received));
  if (stall_after) {
    std::printf("rank %u: stalling\n", rank);
    std::fflush(stdout);
    for (;;) pause();
  }
  return 0;
}
