#include "shm/exchange_plan.h"

#include <algorithm>
#include <string>

namespace ohio {
namespace {

bool PowerOfTwo(uint32_t n) { return n != 0 && (n & (n - 1)) == 0; }

// Remote messages node n receives per round (one per pair of a remote and a local rank).
uint64_t RemoteMessages(const GroupShape& shape, uint32_t n) {
  return uint64_t{shape.ppn(n)} * (shape.size() - shape.ppn(n));
}

uint64_t MaxRemoteMessages(const GroupShape& shape) {
  uint64_t most = 0;
  for (uint32_t n = 0; n < shape.nodes(); ++n) most = std::max(most, RemoteMessages(shape, n));
  return most;
}

// Runs of consecutive group ranks among node q's ranks: [first rank, length).
std::vector<std::pair<uint32_t, uint32_t>> RankRuns(const GroupShape& shape, uint32_t q) {
  std::vector<std::pair<uint32_t, uint32_t>> runs;
  for (uint32_t i = 0; i < shape.ppn(q); ++i) {
    const uint32_t g = shape.rank_at(q, i);
    if (!runs.empty() && runs.back().first + runs.back().second == g) {
      ++runs.back().second;
    } else {
      runs.push_back({g, 1});
    }
  }
  return runs;
}

}  // namespace

std::vector<Step> PairwiseSchedule(uint32_t nodes, uint32_t node) {
  std::vector<Step> steps;
  for (uint32_t s = 1; s < nodes; ++s) {
    if (PowerOfTwo(nodes)) {
      steps.push_back({node ^ s, node ^ s});
    } else {
      steps.push_back({(node + s) % nodes, (node + nodes - s) % nodes});
    }
  }
  return steps;
}

uint64_t SrbHalfBytes(uint64_t srb_bytes) {
  const uint64_t half = srb_bytes / 2;
  return half >= 64 ? half - half % 64 : half;
}

uint64_t MinSrbBytes(const GroupShape& shape, Algorithm algo) {
  if (shape.nodes() == 1) return 0;
  if (algo == Algorithm::kV3) return 2 * 64;
  return MaxRemoteMessages(shape);
}

Result<Staging> PlanGroupStaging(const GroupShape& shape, Algorithm algo, uint64_t ssb_bytes, uint64_t srb_bytes,
                                 uint64_t bytes_per_rank) {
  if (shape.nodes() == 1) return PlanStaging(shape, LocalSsbHalfBytes(ssb_bytes), bytes_per_rank);
  if (algo == Algorithm::kV3) {
    if (srb_bytes < MinSrbBytes(shape, algo)) {
      return Status(Code::kNoMemory, "an SRB of " + std::to_string(srb_bytes) + " bytes cannot hold two halves of " +
                                         "a cache line each");
    }
    // A node receives at most an SSB's worth per round, in chunks of a half plus one partial
    // chunk per block: capping the SSB at kMaxDeliveries/4 halves keeps every delivery index
    // below kMaxRendezvousDeliveries (the immediate's upper half is eager rounds').
    const uint64_t cap = SrbHalfBytes(srb_bytes) * (kMaxDeliveries / 4);
    return PlanStaging(shape, std::min(ssb_bytes, std::max(cap, MinSsbBytes(shape))), bytes_per_rank);
  }
  // v1/v2: one round's remote blocks must all fit the SRB too. An SSB of
  // ssb_bytes * max_ppn*P / max_remote bytes bounds the slice exactly as the SRB does.
  const uint64_t remote = MaxRemoteMessages(shape);
  if (srb_bytes < remote) {
    return Status(Code::kNoMemory, "an SRB of " + std::to_string(srb_bytes) + " bytes cannot hold one byte of each of the " +
                                       std::to_string(remote) + " remote messages a node receives with " +
                                       AlgorithmName(algo) + "; use more srb_bytes or v3");
  }
  const uint64_t messages = MinSsbBytes(shape);
  const uint64_t srb_slice = srb_bytes / remote;
  const uint64_t ssb_equivalent = srb_slice >= ssb_bytes / messages ? ssb_bytes : srb_slice * messages;
  return PlanStaging(shape, ssb_equivalent, bytes_per_rank);
}

std::vector<Delivery> PlanDeliveries(const GroupShape& shape, Algorithm algo, uint32_t node, uint64_t slice,
                                     uint64_t srb_bytes) {
  std::vector<Delivery> out;
  const auto steps = PairwiseSchedule(shape.nodes(), node);
  // At least a byte, so that the chunk loop ends even for an SRB no caller should pass.
  const uint64_t half = std::max<uint64_t>(SrbHalfBytes(srb_bytes), 1);
  uint64_t srb_offset = 0;
  for (uint32_t s = 0; s < steps.size(); ++s) {
    const uint32_t p = steps[s].recv_from;
    const uint64_t block = BlockBytes(shape, p, node, slice);
    if (algo == Algorithm::kV3) {
      uint64_t at = 0;
      do {
        Delivery d;
        d.source = p;
        d.step = s;
        d.block_offset = at;
        d.bytes = std::min(half, block - at);
        d.srb_offset = (out.size() % 2) * half;
        out.push_back(d);
        at += d.bytes;
      } while (at < block);
      continue;
    }
    Delivery d;
    d.source = p;
    d.step = s;
    d.bytes = block;
    d.srb_offset = srb_offset;
    srb_offset += block;
    out.push_back(d);
  }
  return out;
}

std::vector<Put> PlanPuts(const GroupShape& shape, Algorithm algo, uint32_t node, uint64_t slice,
                          uint64_t srb_bytes) {
  std::vector<Put> out;
  const auto steps = PairwiseSchedule(shape.nodes(), node);
  for (uint32_t s = 0; s < steps.size(); ++s) {
    const uint32_t q = steps[s].send_to;
    const auto theirs = PlanDeliveries(shape, algo, q, slice, srb_bytes);
    for (uint32_t d = 0; d < theirs.size(); ++d) {
      const Delivery& del = theirs[d];
      if (del.source != node) continue;
      Put p;
      p.dest = q;
      p.step = s;
      p.delivery = d;
      p.bytes = del.bytes;
      p.srb_offset = del.srb_offset;
      if (del.bytes == 0) {
        // M = 0: the put carries nothing, only the news that the delivery is complete.
      } else if (algo != Algorithm::kV1) {
        p.pieces.push_back({SsbBlockOffset(shape, node, q, slice) + del.block_offset, del.bytes});
      } else {
        // The receiver lays the block [our local rank][its local rank]; its ranks' local
        // indexes follow their global order, so row l's runs land one after another.
        for (uint32_t l = 0; l < shape.ppn(node); ++l) {
          for (const auto& [first, len] : RankRuns(shape, q)) {
            p.pieces.push_back({SsbOffset(shape, algo, node, l, first, slice), uint64_t{len} * slice});
          }
        }
      }
      out.push_back(std::move(p));
    }
  }
  return out;
}

std::vector<CopySpan> PlanCopyOutDelivery(const GroupShape& shape, uint32_t node, uint32_t r,
                                          const Staging& staging, uint64_t round, const Delivery& d) {
  std::vector<CopySpan> spans;
  const uint64_t s = staging.length(round);
  const uint64_t off = staging.offset(round);
  const uint64_t c0 = d.block_offset;
  const uint64_t c1 = d.block_offset + d.bytes;
  for (uint32_t lp = 0; lp < shape.ppn(d.source); ++lp) {
    const uint64_t e0 = (uint64_t{lp} * shape.ppn(node) + r) * s;
    const uint64_t lo = std::max(e0, c0);
    const uint64_t hi = std::min(e0 + s, c1);
    if (lo >= hi) continue;
    spans.push_back({d.srb_offset + (lo - c0), shape.rank_at(d.source, lp) * staging.bytes_per_rank + off + (lo - e0),
                     hi - lo});
  }
  return spans;
}

}  // namespace ohio
