// One rank of a hostile user's job that keeps ohiod busy with large nonblocking calls
// (tests/integration/limits/nonblocking_fairness_test.cc): in a loop for --seconds, ohio_ialltoall of
// --bytes per rank in place, then ohio_wait. Prints "posting" before the first call and, at the
// end, "calls N" once every call succeeded and the buffer still holds its pattern (an alltoall
// of a one-rank group in place leaves it as it was).
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "client/libohio/ohio.hpp"
#include "tests/tools/rank_placement.h"

namespace {

uint8_t Pattern(size_t i) { return static_cast<uint8_t>(i * 7 + (i >> 12)); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("large_ialltoall_rank: large ohio_ialltoall calls in place, in a loop");
  RankPlacement at;
  size_t bytes = size_t{256} << 20;
  double seconds = 5;
  at.AddOptions(&app);
  app.add_option("--bytes", bytes, "bytes per rank");
  app.add_option("--seconds", seconds, "post calls for this long");
  CLI11_PARSE(app, argc, argv);

  ohio::Client client;
  ohio::Group group;
  if (!at.Join(&client, &group)) return 1;
  std::vector<uint8_t> buffer(bytes * at.size);
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = Pattern(i);
  std::printf("posting\n");
  std::fflush(stdout);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  uint64_t calls = 0;
  while (std::chrono::steady_clock::now() < until) {
    ohio_request request = 0;
    ohio::CallResult r = group.Ialltoall(buffer.data(), buffer.data(), bytes, &request);
    if (r.ok()) r = group.Wait(request);
    if (!r.ok()) {
      std::printf("call %llu failed: code=%d %s\n", static_cast<unsigned long long>(calls), r.code, r.message.c_str());
      return 1;
    }
    ++calls;
  }
  if (at.size == 1) {
    for (size_t i = 0; i < buffer.size(); ++i) {
      if (buffer[i] == Pattern(i)) continue;
      std::printf("WRONG byte %zu after %llu calls\n", i, static_cast<unsigned long long>(calls));
      return 1;
    }
  }
  std::printf("calls %llu\n", static_cast<unsigned long long>(calls));
  return 0;
}
