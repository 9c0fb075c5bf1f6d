#include "shm/plan/vector_plan.h"

#include "shm/plan/vector_staging.h"

namespace ohio {
uint64_t VectorRowOffset(const GroupShape& shape, const CountEntry* table, uint32_t dest) {
  uint64_t at = 0;
  for (uint32_t j = 0; j < dest; ++j) {
    for (uint32_t i = 0; i < shape.ppn(j); ++i) at += table[shape.rank_at(j, i)].bytes;
  }
  return at;
}

uint64_t VectorRowBytesTo(const GroupShape& shape, const CountEntry* table, uint32_t dest) {
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < shape.ppn(dest); ++i) bytes += table[shape.rank_at(dest, i)].bytes;
  return bytes;
}

uint64_t VectorRegionBytes(const GroupShape& shape, const EagerLayout& layout, uint32_t node) {
  const uint64_t region = layout.ssb_half / shape.ppn(node);
  return region - region % 64;
}

uint64_t VectorRowBytes(const GroupShape& shape, const CountEntry* table) {
  uint64_t bytes = 0;
  for (uint32_t r = 0; r < shape.size(); ++r) bytes += table[r].bytes;
  return bytes;
}

bool VectorRowFits(const GroupShape& shape, const CountEntry* table, uint64_t region) {
  for (uint32_t r = 0; r < shape.size(); ++r) {
    if (table[r].bytes > region) return false;
  }
  return VectorRowBytes(shape, table) <= region;
}

void PlanVectorCopyIn(const GroupShape& shape, const size_t* send_counts, const size_t* send_displs,
                      std::vector<CopySpan>* spans) {
  spans->clear();
  uint64_t at = 0;
  for (uint32_t j = 0; j < shape.nodes(); ++j) {
    for (uint32_t i = 0; i < shape.ppn(j); ++i) {
      const uint32_t r = shape.rank_at(j, i);
      if (send_counts[r] == 0) continue;
      spans->push_back({send_displs[r], at, send_counts[r]});
      at += send_counts[r];
    }
  }
}

uint64_t VectorSendBlockBytes(const GroupShape& shape, uint32_t node, const NodeCounts& counts, uint32_t dest) {
  uint64_t bytes = 0;
  for (uint32_t l = 0; l < shape.ppn(node); ++l) bytes += VectorRowBytesTo(shape, counts.of(l), dest);
  return bytes;
}

uint64_t VectorRecvBlockBytes(const GroupShape& shape, uint32_t node, const NodeCounts& counts, uint32_t source) {
  uint64_t bytes = 0;
  for (uint32_t r = 0; r < shape.ppn(node); ++r) {
    const CountEntry* t = counts.of(r);
    for (uint32_t i = 0; i < shape.ppn(source); ++i) bytes += t[shape.rank_at(source, i)].recv_bytes;
  }
  return bytes;
}

bool VectorFits(const GroupShape& shape, const EagerLayout& layout, uint32_t node, const NodeCounts& counts) {
  if (layout.slot < kEagerHeaderBytes) return false;
  const uint64_t block = layout.slot - kEagerHeaderBytes;
  const uint64_t region = VectorRegionBytes(shape, layout, node);
  for (uint32_t l = 0; l < shape.ppn(node); ++l) {
    const CountEntry* t = counts.of(l);
    if (!VectorRowFits(shape, t, region)) return false;
    // Each count on its own first: the block sums below cannot wrap around.
    for (uint32_t r = 0; r < shape.size(); ++r) {
      if (t[r].recv_bytes > block) return false;
    }
  }
  for (uint32_t j = 0; j < shape.nodes(); ++j) {
    if (j == node) continue;
    if (VectorSendBlockBytes(shape, node, counts, j) > block) return false;
    if (VectorRecvBlockBytes(shape, node, counts, j) > block) return false;
  }
  return true;
}

uint64_t VectorCountDigest(const GroupShape& shape, uint32_t node, const NodeCounts& counts) {
  uint64_t digest = 0;
  for (uint32_t l = 0; l < shape.ppn(node); ++l) digest += VectorRankDigest(shape, shape.rank_at(node, l), counts.of(l));
  return digest;
}

namespace {

VectorPairKeys PairKeys(uint32_t rank, uint32_t peer) {
  return {Mix64(uint64_t{rank} << 32 | peer), Mix64(uint64_t{peer} << 32 | rank)};
}

}  // namespace

std::vector<VectorPairKeys> VectorPairKeysOf(const GroupShape& shape, uint32_t rank) {
  std::vector<VectorPairKeys> keys(shape.size());
  for (uint32_t r = 0; r < shape.size(); ++r) keys[r] = PairKeys(rank, r);
  return keys;
}

uint64_t VectorRankDigest(const GroupShape& shape, uint32_t rank, const CountEntry* table) {
  uint64_t digest = 0;
  for (uint32_t r = 0; r < shape.size(); ++r) {
    digest += VectorPairDigest(PairKeys(rank, r), table[r].bytes, table[r].recv_bytes);
  }
  return digest;
}

uint64_t VectorLocalBytes(const GroupShape& shape, uint32_t node, const NodeCounts& counts) {
  return VectorSendBlockBytes(shape, node, counts, node);
}

std::vector<Put> PlanVectorPuts(const GroupShape& shape, uint32_t node, const EagerLayout& layout,
                                const NodeCounts& counts) {
  std::vector<Put> puts;
  const uint64_t region = VectorRegionBytes(shape, layout, node);
  PlanVectorPutsOf(
      shape, node, layout,
      [&](uint32_t l, uint32_t dest) {
        const CountEntry* t = counts.of(l);
        return SsbPiece{l * region + VectorRowOffset(shape, t, dest), VectorRowBytesTo(shape, t, dest)};
      },
      &puts);
  return puts;
}

std::vector<Delivery> PlanVectorDeliveries(const GroupShape& shape, uint32_t node, const EagerLayout& layout,
                                           const NodeCounts& counts) {
  // Where and in which order blocks land is the eager round's; only their sizes differ.
  std::vector<Delivery> out = PlanEagerDeliveries(shape, node, layout, 0);
  for (Delivery& d : out) d.bytes = VectorRecvBlockBytes(shape, node, counts, d.source);
  return out;
}

void PlanVectorCopyOutBlock(const GroupShape& shape, uint32_t node, uint32_t local, const NodeCounts& counts,
                            uint32_t source, const size_t* recv_displs, std::vector<CopySpan>* spans) {
  spans->clear();
  uint64_t at = 0;
  for (uint32_t i = 0; i < shape.ppn(source); ++i) {
    const uint32_t from = shape.rank_at(source, i);
    for (uint32_t r = 0; r < shape.ppn(node); ++r) {
      const uint64_t bytes = counts.of(r)[from].recv_bytes;
      if (r == local && bytes != 0) spans->push_back({at, recv_displs[from], bytes});
      at += bytes;
    }
  }
}

void PlanVectorCopyOutOnNode(const GroupShape& shape, uint32_t node, uint32_t local, const EagerLayout& layout,
                            const NodeCounts& counts, const size_t* recv_displs, std::vector<CopySpan>* spans) {
  spans->clear();
  const uint64_t region = VectorRegionBytes(shape, layout, node);
  const uint32_t me = shape.rank_at(node, local);
  for (uint32_t l = 0; l < shape.ppn(node); ++l) {
    const CountEntry* t = counts.of(l);
    const uint64_t bytes = t[me].bytes;
    const uint32_t from = shape.rank_at(node, l);
    if (bytes == 0 || bytes != counts.of(local)[from].recv_bytes) continue;
    uint64_t at = l * region + VectorRowOffset(shape, t, node);
    for (uint32_t i = 0; i < local; ++i) at += t[shape.rank_at(node, i)].bytes;
    spans->push_back({at, recv_displs[from], bytes});
  }
}

bool UpdateVectorRoundPlan(const GroupShape& shape, uint32_t node, const EagerLayout& layout,
                           const CountEntry* tables, VectorRoundPlan* plan) {
  const uint64_t entries = uint64_t{shape.ppn(node)} * shape.size();
  bool same = plan->counts.size() == entries;
  for (uint64_t i = 0; same && i < entries; ++i) {
    same = tables[i].bytes == plan->counts[i].bytes && tables[i].recv_bytes == plan->counts[i].recv_bytes;
  }
  if (same) return false;
  plan->counts.assign(tables, tables + entries);
  const NodeCounts counts{plan->counts.data(), shape.size()};
  plan->fits = VectorFits(shape, layout, node, counts);
  uint64_t stream_rounds = 0;
  plan->stageable = VectorStreamRounds(shape, layout, node, counts, &stream_rounds);
  plan->stream_rounds = plan->stageable ? static_cast<uint32_t>(stream_rounds) : 0;
  plan->puts.clear();
  plan->put_of_dest.assign(shape.nodes(), 0);
  plan->deliveries.clear();
  plan->digest = plan->local_bytes = plan->sent_bytes = 0;
  if (!plan->fits && !plan->stageable) return true;
  if (plan->fits) {
    plan->puts = PlanVectorPuts(shape, node, layout, counts);
    plan->deliveries = PlanVectorDeliveries(shape, node, layout, counts);
  } else {
    // The call's first round carries the headers (digest, rounds needed) and stream round 0 of
    // the node's part (shm/plan/vector_staging.h). What lands here is laid out by each sender's own
    // verdict, which only its header says: no sizes are planned for it.
    PlanVectorStreamPuts(shape, node, layout, counts, 0, &plan->puts);
    plan->deliveries = PlanEagerDeliveries(shape, node, layout, 0);
  }
  for (uint32_t i = 0; i < plan->puts.size(); ++i) plan->put_of_dest[plan->puts[i].dest] = i;
  plan->digest = VectorCountDigest(shape, node, counts);
  plan->local_bytes = VectorLocalBytes(shape, node, counts);
  for (uint32_t l = 0; l < shape.ppn(node); ++l) plan->sent_bytes += VectorRowBytes(shape, counts.of(l));
  return true;
}

}  // namespace ohio
