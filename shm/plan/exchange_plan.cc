#include "shm/plan/exchange_plan.h"

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

Step PairwiseStep(uint32_t nodes, uint32_t node, uint32_t s) {
  if (PowerOfTwo(nodes)) return {node ^ s, node ^ s};
  return {(node + s) % nodes, (node + nodes - s) % nodes};
}

std::vector<Step> PairwiseSchedule(uint32_t nodes, uint32_t node) {
  std::vector<Step> steps;
  for (uint32_t s = 1; s < nodes; ++s) steps.push_back(PairwiseStep(nodes, node, s));
  return steps;
}

uint64_t SrbHalfBytes(uint64_t srb_bytes) {
  const uint64_t half = srb_bytes / 2;
  return half >= 64 ? half - half % 64 : half;
}

uint64_t MinSrbBytes(const GroupShape& shape, NodeLevelDesign algo) {
  if (shape.nodes() == 1) return 0;
  if (algo == NodeLevelDesign::kV3) return 2 * 64;
  return MaxRemoteMessages(shape);
}

namespace {

// The plan of old: every round carries the same slice of every message of the node.
Result<Staging> PlanWholeRounds(const GroupShape& shape, NodeLevelDesign algo, uint64_t ssb_bytes, uint64_t srb_bytes,
                                uint64_t bytes_per_rank) {
  if (algo == NodeLevelDesign::kV3) {
    if (srb_bytes < MinSrbBytes(shape, algo)) {
      return Status(Code::kNoMemory, "an SRB of " + std::to_string(srb_bytes) + " bytes cannot hold two halves of " +
                                         "a cache line each");
    }
    return PlanStaging(shape, V3SsbCap(shape, ssb_bytes, srb_bytes), bytes_per_rank);
  }
  // v1/v2: one round's remote blocks must all fit the SRB too. An SSB of
  // ssb_bytes * max_ppn*P / max_remote bytes bounds the slice exactly as the SRB does.
  const uint64_t remote = MaxRemoteMessages(shape);
  if (srb_bytes < remote) {
    return Status(Code::kNoMemory, "an SRB of " + std::to_string(srb_bytes) + " bytes cannot hold one byte of each of the " +
                                       std::to_string(remote) + " remote messages a node receives with " +
                                       NodeLevelDesignName(algo) + "; use more srb_bytes or v3");
  }
  const uint64_t messages = MinSsbBytes(shape);
  const uint64_t srb_slice = srb_bytes / remote;
  const uint64_t ssb_equivalent = srb_slice >= ssb_bytes / messages ? ssb_bytes : srb_slice * messages;
  return PlanStaging(shape, ssb_equivalent, bytes_per_rank);
}

uint64_t CeilDiv(uint64_t a, uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// a*b, or 2^64-1 where that would wrap: a count of rounds only compared, never used as such.
uint64_t SaturatingProduct(uint64_t a, uint64_t b) {
  return b != 0 && a > ~uint64_t{0} / b ? ~uint64_t{0} : a * b;
}

// A way to cut a call: `rows` rows and `steps` steps a round, slices of `slice`.
struct Cut {
  uint32_t rows = 0;
  uint32_t steps = 0;
  uint64_t slice = 0;
  uint64_t rounds = 0;
};

// The cut of rounds of `rows` rows and `steps` (< N) steps, with the longest slice such rounds
// fit: on every node, rows x (ranks of the nodes reached) x slice within the SSB (counted as
// rows x steps x max PPN, which holds whichever nodes a step reaches), and for v1/v2 everything
// received from (at most steps) other nodes within the SRB. A slice shorter than M is rounded
// down to a cache line as PlanStaging does, unless that would take it below `wanted`.
Cut CutFor(const GroupShape& shape, uint64_t ssb_cap, uint64_t srb_cap, uint64_t bytes_per_rank, uint64_t wanted,
           uint32_t rows, uint32_t steps) {
  Cut c;
  c.rows = rows;
  c.steps = steps;
  const uint64_t columns = std::min<uint64_t>(shape.size(), uint64_t{steps} * shape.max_ppn());
  const uint64_t sources = std::min(steps, shape.nodes() - 1);
  uint64_t fits = ssb_cap / (uint64_t{rows} * columns);
  fits = std::min(fits, srb_cap / (uint64_t{rows} * shape.max_ppn() * sources));
  if (fits == 0) return c;
  const uint64_t line = fits - fits % 64;
  c.slice = fits >= bytes_per_rank ? bytes_per_rank : (line >= 64 && line >= wanted ? line : fits);
  const uint64_t slices = c.slice == 0 ? 1 : CeilDiv(bytes_per_rank, c.slice);
  c.rounds = SaturatingProduct(SaturatingProduct(slices, CeilDiv(shape.nodes(), steps)),
                               CeilDiv(shape.max_ppn(), rows));
  return c;
}

}  // namespace

uint64_t V3SsbCap(const GroupShape& shape, uint64_t ssb_bytes, uint64_t srb_bytes) {
  // A node receives at most an SSB's worth per round, in chunks of a half plus one partial
  // chunk per block: capping the SSB at kMaxDeliveries/4 halves keeps every delivery index
  // below kMaxRendezvousDeliveries (the immediate's upper half is eager rounds').
  const uint64_t cap = SrbHalfBytes(srb_bytes) * (kMaxDeliveries / 4);
  return std::min(ssb_bytes, std::max(cap, MinSsbBytes(shape)));
}

Result<Staging> PlanGroupStaging(const GroupShape& shape, NodeLevelDesign algo, uint64_t ssb_bytes, uint64_t srb_bytes,
                                 uint64_t bytes_per_rank, uint64_t min_slice) {
  if (shape.nodes() == 1) return PlanStaging(shape, LocalSsbHalfBytes(ssb_bytes), bytes_per_rank);
  Result<Staging> whole = PlanWholeRounds(shape, algo, ssb_bytes, srb_bytes, bytes_per_rank);
  if (!whole.ok()) return whole;
  const uint64_t wanted = std::min(min_slice, bytes_per_rank);
  if (whole->slice >= wanted) return whole;
  // Slices too short to copy efficiently: fewer rows or fewer nodes a round, longer slices.
  // Of the cuts whose slice is at least the minimum, the fewest rounds (then the longest
  // slice); when none is (an SSB below max PPN x the minimum), the longest slice.
  const uint64_t ssb_cap = algo == NodeLevelDesign::kV3 ? V3SsbCap(shape, ssb_bytes, srb_bytes) : ssb_bytes;
  const uint64_t srb_cap = algo == NodeLevelDesign::kV3 ? ~uint64_t{0} : srb_bytes;
  std::vector<Cut> cuts;
  for (uint32_t steps = shape.nodes() - 1; steps >= 1; --steps) {
    cuts.push_back(CutFor(shape, ssb_cap, srb_cap, bytes_per_rank, wanted, shape.max_ppn(), steps));
  }
  for (uint32_t rows = shape.max_ppn() - 1; rows >= 1; --rows) {
    cuts.push_back(CutFor(shape, ssb_cap, srb_cap, bytes_per_rank, wanted, rows, 1));
  }
  const Cut* best = nullptr;
  for (const Cut& c : cuts) {
    if (c.slice < wanted) continue;
    if (!best || c.rounds < best->rounds || (c.rounds == best->rounds && c.slice > best->slice)) best = &c;
  }
  if (!best) {
    for (const Cut& c : cuts) {
      if (!best || c.slice > best->slice || (c.slice == best->slice && c.rounds < best->rounds)) best = &c;
    }
  }
  // Every cut, including the longest (one row, one step), fits no longer a slice than the
  // whole rounds do.
  if (!best || best->slice <= whole->slice) return whole;
  Staging s;
  s.bytes_per_rank = bytes_per_rank;
  s.slice = best->slice;
  s.rounds = best->rounds;
  s.steps = best->steps;
  s.step_groups = static_cast<uint32_t>(CeilDiv(shape.nodes(), best->steps));
  s.rows = best->rows;
  s.row_parts = static_cast<uint32_t>(CeilDiv(shape.max_ppn(), best->rows));
  return s;
}

namespace {

// Visits node's deliveries of a round covering `cover` in order, as visit(index, delivery),
// until visit returns false.
template <typename Visit>
void VisitDeliveries(const GroupShape& shape, NodeLevelDesign algo, uint32_t node, const RoundCover& cover,
                     uint64_t srb_bytes, Visit visit) {
  // At least a byte, so that the chunk loop ends even for an SRB no caller should pass.
  const uint64_t half = std::max<uint64_t>(SrbHalfBytes(srb_bytes), 1);
  uint64_t srb_offset = 0;
  uint32_t index = 0;
  auto receive = [&](uint32_t p, uint32_t s) {
    const uint64_t block = BlockBytes(shape, p, node, cover);
    if (algo == NodeLevelDesign::kV3) {
      uint64_t at = 0;
      do {
        Delivery d;
        d.source = p;
        d.step = s;
        d.block_offset = at;
        d.bytes = std::min(half, block - at);
        d.srb_offset = (index % 2) * half;
        if (!visit(index++, d)) return false;
        at += d.bytes;
      } while (at < block);
      return true;
    }
    Delivery d;
    d.source = p;
    d.step = s;
    d.bytes = block;
    d.srb_offset = srb_offset;
    srb_offset += block;
    return visit(index++, d);
  };
  if (cover.every_step(shape.nodes())) {
    for (uint32_t s = 1; s < shape.nodes(); ++s) {
      if (!receive(PairwiseStep(shape.nodes(), node, s).recv_from, s - 1)) return;
    }
    return;
  }
  for (uint32_t t = std::max(cover.first_step, 1u); t < std::min(cover.end_step, shape.nodes()); ++t) {
    if (!receive(static_cast<uint32_t>((uint64_t{node} + shape.nodes() - t) % shape.nodes()), t - 1)) return;
  }
}

}  // namespace

std::vector<Delivery> PlanDeliveries(const GroupShape& shape, NodeLevelDesign algo, uint32_t node, const RoundCover& cover,
                                     uint64_t srb_bytes) {
  std::vector<Delivery> out;
  VisitDeliveries(shape, algo, node, cover, srb_bytes, [&](uint32_t, const Delivery& d) {
    out.push_back(d);
    return true;
  });
  return out;
}

std::vector<Put> PlanPuts(const GroupShape& shape, NodeLevelDesign algo, uint32_t node, const RoundCover& cover,
                          uint64_t srb_bytes) {
  std::vector<Put> out;
  const uint32_t rows_end = std::min(cover.end_row, shape.ppn(node));
  // Only q's deliveries up to the last of ours are planned: a put's index and SRB offset depend
  // on those before it, and planning all of every receiver's would cost N^2 a node and round.
  std::vector<std::pair<uint32_t, Delivery>> ours;
  auto send = [&](uint32_t q, uint32_t s) {
    ours.clear();
    VisitDeliveries(shape, algo, q, cover, srb_bytes, [&](uint32_t d, const Delivery& del) {
      if (del.source == node) {
        ours.push_back({d, del});
      } else if (!ours.empty()) {
        return false;  // a node's deliveries to q are consecutive
      }
      return true;
    });
    for (const auto& [d, del] : ours) {
      Put p;
      p.dest = q;
      p.step = s;
      p.delivery = d;
      p.bytes = del.bytes;
      p.srb_offset = del.srb_offset;
      if (del.bytes == 0) {
        // M = 0, or no row of ours this round: the put carries nothing, only the news that
        // the delivery is complete.
      } else if (algo != NodeLevelDesign::kV1) {
        p.pieces.push_back({SsbBlockOffset(shape, node, q, cover) + del.block_offset, del.bytes});
      } else if (!cover.every_step(shape.nodes())) {
        // Each row holds q's ranks side by side.
        for (uint32_t l = cover.first_row; l < rows_end; ++l) {
          p.pieces.push_back({SsbOffset(shape, algo, node, l, shape.rank_at(q, 0), cover),
                              uint64_t{shape.ppn(q)} * cover.length});
        }
      } else {
        // The receiver lays the block [our local rank][its local rank]; its ranks' local
        // indexes follow their global order, so row l's runs land one after another.
        for (uint32_t l = cover.first_row; l < rows_end; ++l) {
          for (const auto& [first, len] : RankRuns(shape, q)) {
            p.pieces.push_back({SsbOffset(shape, algo, node, l, first, cover), uint64_t{len} * cover.length});
          }
        }
      }
      out.push_back(std::move(p));
    }
  };
  if (cover.every_step(shape.nodes())) {
    const auto steps = PairwiseSchedule(shape.nodes(), node);
    for (uint32_t s = 0; s < steps.size(); ++s) send(steps[s].send_to, s);
    return out;
  }
  for (uint32_t t = std::max(cover.first_step, 1u); t < std::min(cover.end_step, shape.nodes()); ++t) {
    send(static_cast<uint32_t>((uint64_t{node} + t) % shape.nodes()), t - 1);
  }
  return out;
}

std::vector<CopySpan> PlanCopyOutDelivery(const GroupShape& shape, uint32_t node, uint32_t r,
                                          const Staging& staging, uint64_t round, const Delivery& d) {
  std::vector<CopySpan> spans;
  const RoundCover cover = staging.cover(round);
  const uint64_t s = cover.length;
  const uint64_t c0 = d.block_offset;
  const uint64_t c1 = d.block_offset + d.bytes;
  const uint32_t rows_end = std::min(cover.end_row, shape.ppn(d.source));
  for (uint32_t lp = cover.first_row; lp < rows_end; ++lp) {
    const uint64_t e0 = (uint64_t{lp - cover.first_row} * shape.ppn(node) + r) * s;
    const uint64_t lo = std::max(e0, c0);
    const uint64_t hi = std::min(e0 + s, c1);
    if (lo >= hi) continue;
    spans.push_back({d.srb_offset + (lo - c0),
                     shape.rank_at(d.source, lp) * staging.bytes_per_rank + cover.offset + (lo - e0), hi - lo});
  }
  return spans;
}

}  // namespace ohio
