// ohio-sim's NIC queue-pair cache model (sim/qp_cache.h) as the simulation uses it: one LRU per
// node over its peers' queue pairs, used by every message its daemon sends or takes in, kept
// across rounds and calls. Exact miss counts per node for schedules small enough to follow by
// hand; no timing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/sim/sim_runner.h"

namespace ohio::testing {
namespace {

std::vector<uint64_t> MissesPerNode(const SimRun& run) {
  std::vector<uint64_t> out;
  for (const auto& node : run.report["per_node"]) out.push_back(node["qp_misses"].get<uint64_t>());
  return out;
}

// 3 x 1 at 1 B, pairwise: one eager round per call; node i puts to i+1 then i+2 and takes in
// i+2's put (its first, to i+2+1 = i) before i+1's (its second). With one entry every change
// of peer misses. The first call: put to i+1 (miss), put to i+2 (miss), i+2's put lands (hit:
// it arrives after node i posted its own second put, since every node posts at the same times
// and a message takes time to arrive), i+1's put (miss): 3. Every later call starts on the
// peer the one before ended on: i+1 (hit), i+2 (miss), i+2 (hit), i+1 (miss): 2. So 1 + 2 x calls.
TEST(SimQpCache, OneEntryMissesEveryChangeOfPeerAcrossCalls) {
  for (int calls : {1, 3}) {
    const SimRun run = RunOhioSim({"--nodes", "3", "--ppn", "1", "--bytes", "1", "--iterations",
                                   std::to_string(calls), "--internode", "pairwise", "--qp-cache-entries", "1",
                                   "--qp-miss-penalty", "1e-3"});
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const uint64_t want = 1 + 2 * static_cast<uint64_t>(calls);
    EXPECT_EQ(MissesPerNode(run), std::vector<uint64_t>(3, want)) << calls << " calls";
    for (const auto& node : run.report["per_node"]) {
      EXPECT_EQ(node["data_frames_sent"].get<uint64_t>() + node["data_frames_received"].get<uint64_t>(),
                4u * static_cast<uint64_t>(calls));
    }
  }
}

// With room for every peer, a queue pair misses once, at its first use, however many rounds,
// control frames and calls follow: eager and announced calls (ROUND_READYs, v3's CREDITs, a
// 1 MiB call in several rounds) pairwise at 4 x 2 reach all 3 peers; the hypercube at 4 nodes
// exchanges with 2 (node i XOR 1, then XOR 2).
TEST(SimQpCache, EnoughEntriesMissOnlyTheFirstUseOfEachPeer) {
  struct Case {
    std::string internode;
    std::string bytes;
    std::string entries;
    uint64_t misses;
  };
  for (const Case& c : {Case{"pairwise", "1,65536,1048576", "3", 3}, Case{"pairwise", "1,65536,1048576", "64", 3},
                        Case{"hypercube", "1,64", "3", 2}}) {
    const SimRun run =
        RunOhioSim({"--nodes", "4", "--ppn", "2", "--bytes", c.bytes, "--iterations", "2", "--internode", c.internode,
                    "--qp-cache-entries", c.entries, "--qp-miss-penalty", "1e-3"});
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(MissesPerNode(run), std::vector<uint64_t>(4, c.misses)) << c.internode << " " << c.entries;
    if (c.internode == "pairwise") EXPECT_GT(run.report["per_node"][0]["control_frames_sent"].get<uint64_t>(), 0u);
  }
}

// Off (the default), nothing is counted and the report says so.
TEST(SimQpCache, OffCountsNoMisses) {
  const SimRun run = RunOhioSim({"--nodes", "3", "--ppn", "1", "--bytes", "1,65536", "--internode", "pairwise"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.report["qp_cache_entries"].get<uint64_t>(), 0u);
  EXPECT_EQ(MissesPerNode(run), std::vector<uint64_t>(3, 0));
}

}  // namespace
}  // namespace ohio::testing
