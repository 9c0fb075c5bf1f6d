// One rank of a test job calling ohio_ialltoall (or, with --vector, ohio_ialltoallv): after a blocking alltoall that lines the ranks
// up, it starts --outstanding calls at once, each with its own buffers, then "computes": it
// watches its receive buffers with plain loads, never calling into ohio, until each holds
// exactly what it must (or 20 s pass). Only then does it ask ohio_test, which must find every
// call complete without waiting. Every received byte is checked. An expected error (a size
// mismatch, an unmapped buffer) must reach this rank as that error, and the calls after it
// must work. With --vector every pair has its own count (some zero), the send blocks lie in
// reverse order and the receive blocks rotated, with gaps between them that must stay
// unwritten; --skew-bytes gives one pair a count far above the rest (across nodes, a call that
// goes in stream rounds), and the last line sums the bytes sent to and received from other
// nodes' ranks, for the daemons' counters. With --blocking-after-starting, a blocking alltoall comes between starting and
// watching: it may only begin once this rank's nonblocking calls are complete (MPI's order), so right
// after it every nonblocking call must already hold its bytes. With --expect-completion, the rank
// says "holding" after the line-up, waits for a file (a test stops the daemon meanwhile), starts
// one call and completes it by an ohio_test loop (or ohio_wait with --wait), which must end
// with that error; it says how long it took. Exits 0 only if everything matched.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <numeric>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "client/libohio/ohio.hpp"
#include "tests/tools/rank_placement.h"

namespace {

uint8_t Pattern(uint32_t src, uint32_t dst, uint64_t i, uint32_t call) {
  return static_cast<uint8_t>(src * 131u + dst * 31u + i * 7u + call * 13u + (i >> 8));
}

constexpr uint8_t kUnwritten = 0xEE;

constexpr uint8_t kSendGap = 0x55;

struct Call {
  std::vector<uint8_t> send, recv, want;
  ohio_request request = 0;
  bool in_place = false;
  int expect_code = OHIO_OK;
  std::vector<size_t> send_counts, send_displs, recv_counts, recv_displs;  // --vector
};

// One pair of a --vector job that sends far more than the others, every call.
struct Skew {
  int from = -1, to = -1;
  size_t bytes = 0;
};

// The bytes src sends dst in call `id` of a --vector job: a third of the pairs send nothing.
size_t VectorCount(uint32_t src, uint32_t dst, uint32_t id, size_t bytes, const Skew& skew) {
  if (static_cast<int>(src) == skew.from && static_cast<int>(dst) == skew.to) return skew.bytes + id;
  return (src + 2 * dst + id) % 3 == 0 ? 0 : bytes + (src * 5 + dst * 3 + id) % 7;
}

// Lays out a --vector call of rank `me`: send blocks in reverse order 3 bytes apart, receive
// blocks from rank me+1 on, 5 bytes apart, the gaps left as they were.
void LayOutVector(Call* call, uint32_t me, uint32_t size, uint32_t id, size_t bytes, const Skew& skew) {
  call->send_counts.assign(size, 0);
  call->send_displs.assign(size, 0);
  call->recv_counts.assign(size, 0);
  call->recv_displs.assign(size, 0);
  size_t at = 0;
  for (uint32_t k = size; k-- > 0;) {
    call->send_counts[k] = VectorCount(me, k, id, bytes, skew);
    call->send_displs[k] = at;
    at += call->send_counts[k] + 3;
  }
  call->send.assign(at, kSendGap);
  for (uint32_t d = 0; d < size; ++d) {
    for (size_t i = 0; i < call->send_counts[d]; ++i) call->send[call->send_displs[d] + i] = Pattern(me, d, i, id);
  }
  at = 0;
  for (uint32_t k = 1; k <= size; ++k) {
    const uint32_t s = (me + k) % size;
    call->recv_counts[s] = VectorCount(s, me, id, bytes, skew);
    call->recv_displs[s] = at;
    at += call->recv_counts[s] + 5;
  }
  call->want.assign(at, kUnwritten);
  for (uint32_t s = 0; s < size; ++s) {
    for (size_t i = 0; i < call->recv_counts[s]; ++i) call->want[call->recv_displs[s] + i] = Pattern(s, me, i, id);
  }
  call->recv.assign(at, kUnwritten);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("ialltoall_rank: one verified rank of a test job calling ohio_ialltoall");
  RankPlacement at;
  std::string expect;
  uint32_t batches = 1, outstanding = 1;
  size_t bytes = 1024;
  int mismatch_rank = -1, unmapped_rank = -1, alltoall_rank = -1;
  uint32_t delay_starting_ms = 0;
  bool die_before_starting = false, wait = false, vector = false, blocking_after_starting = false;
  Skew skew;
  at.AddOptions(&app);
  app.add_option("--batches", batches);
  app.add_option("--outstanding", outstanding, "calls started at once in a batch");
  app.add_option("--bytes", bytes, "bytes per rank");
  app.add_option("--mismatch-rank", mismatch_rank,
                 "this rank passes one byte more in the first call: every rank must get a size mismatch");
  app.add_option("--unmapped-rank", unmapped_rank,
                 "this rank passes an unmapped receive buffer in the first call: every rank must get an "
                 "invalid argument");
  app.add_flag("--die-before-starting", die_before_starting, "exit without leaving after the line-up");
  app.add_option("--delay-starting-ms", delay_starting_ms, "after the line-up, sleep this long before starting");
  app.add_flag("--vector", vector, "call ohio_ialltoallv with counts per pair");
  app.add_option("--skew-from", skew.from, "with --vector, the rank that sends --skew-bytes (+ the call's index)");
  app.add_option("--skew-to", skew.to, "the rank that receives them");
  app.add_option("--skew-bytes", skew.bytes);
  app.add_option("--alltoall-rank", alltoall_rank,
                 "with --vector, this rank starts the first call as an ohio_ialltoall: every rank must get an "
                 "invalid argument on one node (the daemon compares the kinds started), a size mismatch across "
                 "nodes (the ranks arrive at the round with different kinds, as blocking calls would)");
  app.add_flag("--blocking-after-starting", blocking_after_starting,
               "after starting, a verified blocking alltoall of --bytes; the nonblocking calls must be complete by then");
  app.add_flag("--wait", wait, "complete the calls with ohio_wait at once instead of computing first");
  app.add_option("--expect", expect, "every ohio_ialltoall must fail with this error (ohio_strerror's name)");
  std::string hold_file, expect_completion;
  app.add_option("--hold-before-starting", hold_file,
                 "after the line-up, say 'holding' and wait (up to 10 minutes) until this file exists");
  app.add_option("--expect-completion", expect_completion,
                 "start one call and test it (ohio_test, 1 ms apart; ohio_wait with --wait) until it completes, "
                 "which it must with this error (ohio_strerror's name); at most 10 minutes");
  CLI11_PARSE(app, argc, argv);

  ohio::Client client;
  ohio::Group group;
  if (!at.Join(&client, &group)) return 1;
  const uint32_t size = at.size, rank = at.rank;
  ohio::CallResult r;
  if (!expect.empty()) {
    std::vector<uint8_t> send(size * bytes), recv(size * bytes);
    ohio_request request = 0;
    std::vector<size_t> counts(size, bytes), displs(size);
    for (uint32_t j = 0; j < size; ++j) displs[j] = j * bytes;
    r = vector ? group.Ialltoallv(send.data(), counts.data(), displs.data(), recv.data(), counts.data(), displs.data(),
                                  &request)
               : group.Ialltoall(send.data(), recv.data(), bytes, &request);
    std::printf("rank %u: code=%d (%s) %s\n", rank, r.code, ohio_strerror(r.code), r.message.c_str());
    return expect == ohio_strerror(r.code) ? 0 : 1;
  }
  if (!expect_completion.empty()) {
    std::vector<uint8_t> token(size), tokens(size), send(size * bytes), recv(size * bytes);
    r = group.Alltoall(token.data(), tokens.data(), 1);
    if (!r.ok()) {
      std::printf("rank %u: lining up failed: %s\n", rank, r.message.c_str());
      return 1;
    }
    if (!hold_file.empty()) {
      std::printf("rank %u: holding\n", rank);
      std::fflush(stdout);
      for (int waited = 0; access(hold_file.c_str(), F_OK) != 0; ++waited) {
        if (waited == 600000) return 1;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    const auto start = std::chrono::steady_clock::now();
    ohio_request request = 0;
    r = group.Ialltoall(send.data(), recv.data(), bytes, &request);
    int done = r.ok() ? 0 : 1;
    const auto give_up = start + std::chrono::minutes(10);
    while (r.ok() && done == 0 && std::chrono::steady_clock::now() < give_up) {
      if (wait) {
        r = group.Wait(request);
        done = 1;
      } else if ((r = group.Test(request, &done)).ok() && done == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    std::printf("rank %u: completion done=%d code=%d (%s) %s after %lld ms\n", rank, done, r.code, ohio_strerror(r.code),
                r.message.c_str(), static_cast<long long>(took.count()));
    const ohio::CallResult left = group.Leave();
    std::printf("rank %u: leave code=%d (%s) %s\n", rank, left.code, ohio_strerror(left.code), left.message.c_str());
    return done == 1 && expect_completion == ohio_strerror(r.code) ? 0 : 1;
  }
  uint64_t verified = 0, moved_unaided = 0, remote_sent = 0, remote_received = 0;
  const auto loop_began = std::chrono::steady_clock::now();
  for (uint32_t batch = 0; batch < batches; ++batch) {
    // Lines the ranks up, so that every rank starts the batch within moments of the others.
    std::vector<uint8_t> token(size), tokens(size);
    r = group.Alltoall(token.data(), tokens.data(), 1);
    if (!r.ok()) {
      std::printf("rank %u: lining up failed: %s\n", rank, r.message.c_str());
      return 1;
    }
    if (die_before_starting) _exit(3);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_starting_ms));
    std::vector<Call> calls(outstanding);
    for (uint32_t c = 0; c < outstanding; ++c) {
      Call& call = calls[c];
      const uint32_t id = batch * outstanding + c;
      if (id == 0 && mismatch_rank >= 0) call.expect_code = OHIO_ERR_SIZE_MISMATCH;
      if (id == 0 && (unmapped_rank >= 0 || alltoall_rank >= 0)) call.expect_code = OHIO_ERR_INVALID_ARGUMENT;
      if (id == 0 && alltoall_rank >= 0 && at.nodes.size() > 1) call.expect_code = OHIO_ERR_SIZE_MISMATCH;
      if (vector && id == 0 && static_cast<int>(rank) == alltoall_rank) {
        LayOutVector(&call, rank, size, id, bytes, skew);
        r = group.Ialltoall(call.send.data(), call.recv.data(), 1, &call.request);
      } else if (vector) {
        LayOutVector(&call, rank, size, id, bytes, skew);
        if (id == 0 && static_cast<int>(rank) == mismatch_rank) ++call.send_counts[0];
        void* recv = call.recv.data();
        if (id == 0 && static_cast<int>(rank) == unmapped_rank) recv = reinterpret_cast<void*>(uintptr_t{4096});
        r = group.Ialltoallv(call.send.data(), call.send_counts.data(), call.send_displs.data(), recv,
                             call.recv_counts.data(), call.recv_displs.data(), &call.request);
      } else {
        call.in_place = c == 1;  // one call per batch (from the second on) sends and receives in one buffer
        call.send.resize(size * bytes);
        for (uint32_t d = 0; d < size; ++d) {
          for (size_t i = 0; i < bytes; ++i) call.send[d * bytes + i] = Pattern(rank, d, i, id);
        }
        call.want.resize(size * bytes);
        for (uint32_t s = 0; s < size; ++s) {
          for (size_t i = 0; i < bytes; ++i) call.want[s * bytes + i] = Pattern(s, rank, i, id);
        }
        if (call.in_place) {
          call.recv = call.send;
        } else {
          call.recv.assign(size * bytes, kUnwritten);
        }
        size_t m = bytes;
        void* recv = call.recv.data();
        const void* send = call.in_place ? call.recv.data() : call.send.data();
        if (id == 0 && static_cast<int>(rank) == mismatch_rank) m = bytes + 1;
        if (id == 0 && static_cast<int>(rank) == unmapped_rank) recv = reinterpret_cast<void*>(uintptr_t{4096});
        r = group.Ialltoall(send, recv, m, &call.request);
      }
      if (!r.ok()) {
        std::printf("rank %u: starting call %u failed: code=%d (%s) %s\n", rank, id, r.code, ohio_strerror(r.code),
                    r.message.c_str());
        return 1;
      }
    }
    if (blocking_after_starting) {
      std::vector<uint8_t> send(size * bytes), recv(size * bytes, kUnwritten);
      for (uint32_t d = 0; d < size; ++d) {
        for (size_t i = 0; i < bytes; ++i) send[d * bytes + i] = Pattern(rank, d, i, 1000 + batch);
      }
      r = group.Alltoall(send.data(), recv.data(), bytes);
      for (uint32_t s = 0; r.ok() && s < size; ++s) {
        for (size_t i = 0; i < bytes; ++i) {
          if (recv[s * bytes + i] == Pattern(s, rank, i, 1000 + batch)) continue;
          std::printf("rank %u: WRONG byte %zu from rank %u in the blocking alltoall\n", rank, i, s);
          return 1;
        }
      }
      if (!r.ok()) {
        std::printf("rank %u: the blocking alltoall after starting failed: code=%d (%s) %s\n", rank, r.code,
                    ohio_strerror(r.code), r.message.c_str());
        return 1;
      }
      for (uint32_t c = 0; c < outstanding; ++c) {
        const Call& call = calls[c];
        if (call.expect_code != OHIO_OK || std::memcmp(call.recv.data(), call.want.data(), call.want.size()) == 0) continue;
        std::printf("rank %u: nonblocking call %u was not complete when the blocking alltoall after it returned\n", rank,
                    batch * outstanding + c);
        return 1;
      }
    }
    // Computing: plain loads of the receive buffers only, no call into ohio.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (Call& call : calls) {
      if (call.expect_code != OHIO_OK || wait) continue;
      while (std::memcmp(call.recv.data(), call.want.data(), call.want.size()) != 0 &&
             std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    for (uint32_t c = 0; c < outstanding; ++c) {
      Call& call = calls[c];
      const uint32_t id = batch * outstanding + c;
      int done = 0;
      // An expected failure may still be under way. A call that must succeed has all its bytes
      // here, but ohiod writes the last of them before it publishes the call done (a rank that
      // looks in between sees done = 0): test again for a while, as a program's MPI_Test loop
      // would, never waiting.
      if (call.expect_code == OHIO_OK && !wait) {
        const auto test_until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        do {
          r = group.Test(call.request, &done);
        } while (r.ok() && done == 0 && std::chrono::steady_clock::now() < test_until &&
                 (std::this_thread::sleep_for(std::chrono::milliseconds(1)), true));
      } else {
        r = group.Wait(call.request);
        done = 1;
      }
      if (call.expect_code != OHIO_OK) {
        std::printf("rank %u: call %u: code=%d (%s) %s\n", rank, id, r.code, ohio_strerror(r.code), r.message.c_str());
        if (r.code != call.expect_code) return 1;
        continue;
      }
      if (!r.ok() || done != 1) {
        std::printf("rank %u: call %u: done=%d, code=%d (%s) %s\n", rank, id, done, r.code, ohio_strerror(r.code),
                    r.message.c_str());
        return 1;
      }
      // Every byte, the gaps between the blocks too.
      const auto wrong = std::mismatch(call.recv.begin(), call.recv.end(), call.want.begin());
      if (wrong.first != call.recv.end()) {
        std::printf("rank %u: WRONG byte at offset %zu of the receive buffer in call %u: got %u want %u\n", rank,
                    static_cast<size_t>(wrong.first - call.recv.begin()), id, *wrong.first, *wrong.second);
        return 1;
      }
      verified += vector ? std::accumulate(call.recv_counts.begin(), call.recv_counts.end(), size_t{0}) : size * bytes;
      for (uint32_t j = 0; vector && j < size; ++j) {
        if (at.rank_node[j] == at.rank_node[rank]) continue;
        remote_sent += call.send_counts[j];
        remote_received += call.recv_counts[j];
      }
      ++moved_unaided;
      // A request is forgotten once its outcome was taken.
      r = group.Test(call.request, &done);
      if (r.code != OHIO_ERR_INVALID_ARGUMENT) {
        std::printf("rank %u: call %u: a second test returned %d, not invalid argument\n", rank, id, r.code);
        return 1;
      }
    }
  }
  const double loop_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_began).count();
  std::printf(
      "rank %u: ok moved_unaided=%llu verified_bytes=%llu remote_sent_bytes=%llu remote_received_bytes=%llu "
      "loop_seconds=%.6f\n",
      rank, static_cast<unsigned long long>(moved_unaided), static_cast<unsigned long long>(verified),
      static_cast<unsigned long long>(remote_sent), static_cast<unsigned long long>(remote_received), loop_seconds);
  return 0;
}
